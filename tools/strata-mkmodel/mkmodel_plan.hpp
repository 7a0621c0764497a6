// The tensor plan of strata-mkmodel: one TensorSpec per tensor (name, type, shape and how its
// values are drawn), and the type a matrix falls back to when its rows do not fit the blocks of
// the chosen type. Public headers only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace mkmodel {

// Where a tensor's values come from.
enum class Derive {
    none,  // drawn as the tensor's own values
    k_b,   // attn_k_b [nope, C, H]: the k rows of the layer's attn_kv_b matrix, transposed per head
    v_b,   // attn_v_b [C, v_dim, H]: the v rows of the layer's attn_kv_b matrix
};

// One tensor to generate: normal(a, b) values, or uniform [a, b) for norm weights.
struct TensorSpec {
    std::string name;
    int type;                    // what is written
    std::vector<int64_t> shape;  // ne, innermost first
    bool uniform;
    float a, b;            // normal: mean a, stddev b; uniform: [a, b)
    uint64_t key = 0;      // with the seed, selects the generator (so tensors can be made in any order)
    int requested = -1;    // --type when `type` is a row-length fallback from it; -1: no fallback
    bool per_slice = false;  // 3-D expert tensor: each ne[2] slice has its own generator and is made
                             // and converted alone, so only one slice is ever held as float32
    Derive derive = Derive::none;
    int64_t kv_other = 0;  // Derive::k_b: v_dim; Derive::v_b: nope (the other part of a kv_b head)

    int64_t count() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
    int64_t slice_count() const { return shape[0] * (shape.size() > 1 ? shape[1] : 1); }
};

// The row length (ne[0]) a block-quantized type needs a multiple of; 1 for float types.
inline int64_t block_size(int type) {
    switch (type) {
        case STRATA_TYPE_F32: case STRATA_TYPE_F16: case STRATA_TYPE_BF16: return 1;
        case STRATA_TYPE_Q4_0: case STRATA_TYPE_Q4_1: case STRATA_TYPE_Q5_0: case STRATA_TYPE_Q5_1:
        case STRATA_TYPE_Q8_0: case STRATA_TYPE_IQ4_NL: case STRATA_TYPE_MXFP4: return 32;
        case STRATA_TYPE_Q1_0: return 128;
        default: return 256;  // the K-quants, IQ and ternary types
    }
}

// The type a matrix with rows of `row` values gets under `type`: `type` when its blocks fit the
// rows, else q8_0 when they fit blocks of 32, else f16. (llama.cpp's quantizer falls back the same
// way, to iq4_nl, also blocks of 32, and then f16; strata writes q8_0 for the former.)
inline int row_type(int type, int64_t row) {
    if (row % block_size(type) == 0) return type;
    if (row % block_size(STRATA_TYPE_Q8_0) == 0) return STRATA_TYPE_Q8_0;
    return STRATA_TYPE_F16;
}

// FNV-1a of a name: a generator key that does not depend on a tensor's place in the plan.
inline uint64_t name_key(const std::string& name) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
    return h;
}

}  // namespace mkmodel
