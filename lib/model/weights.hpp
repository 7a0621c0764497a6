// Weight binding: the tensors of a contiguous layer range [first, last) as views into the mapped
// file, each checked for presence, type and shape. Shapes are written as ggml stores them,
// innermost (row length) first: [cols, rows].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/hparams.hpp"

namespace strata::gguf {
class ModelFile;
}

namespace strata::model {

// A 2-D weight matrix (rows of `cols` elements, ggml type `type`) or a vector (rows == 1).
struct WeightView {
    std::string name;
    uint32_t type = 0;
    int64_t cols = 0;          // ne[0]: elements per row
    int64_t rows = 0;          // ne[1]
    uint64_t row_bytes = 0;
    const uint8_t* data = nullptr;  // into the mapping
    uint64_t nbytes = 0;
    bool present() const { return data != nullptr; }
    const uint8_t* row(int64_t r) const { return data + uint64_t(r) * row_bytes; }
};

struct LayerWeights {
    // norms and biases are small: kept as float32 copies (any stored float/quant type accepted)
    std::vector<float> attn_norm;  // [n_embd]
    WeightView wq;                 // [n_embd, n_q]
    WeightView wk;                 // [n_embd, n_kv]
    WeightView wv;                 // [n_embd, n_kv]
    WeightView wo;                 // [n_q, n_embd]
    std::vector<float> bq, bk, bv; // qwen2: [n_q], [n_kv], [n_kv]; empty otherwise
    std::vector<float> q_norm;     // qwen3: [head_dim]; empty otherwise
    std::vector<float> k_norm;     // qwen3: [head_dim]
    std::vector<float> ffn_norm;   // [n_embd]
    WeightView w_gate;             // [n_embd, n_ff]
    WeightView w_up;               // [n_embd, n_ff]
    WeightView w_down;             // [n_ff, n_embd]
};

struct ModelWeights {
    int first_layer = 0;  // the range [first_layer, last_layer) of this stage
    int last_layer = 0;
    bool first_stage() const { return first_layer == 0; }
    bool last_stage = false;
    WeightView token_embd;          // [n_embd, n_vocab]; first stage (and last, when tied)
    std::vector<LayerWeights> layers;  // last_layer - first_layer entries
    std::vector<float> output_norm; // [n_embd]; last stage
    WeightView output;              // [n_embd, n_vocab]; last stage (token_embd when tied)
    bool tied_output = false;
    uint64_t mapped_bytes = 0;      // bytes of every distinct tensor bound (what the stage touches)
};

// Binds layers [first, last) (0 <= first < last <= n_layer), plus token_embd when first == 0 and
// output_norm/output when last == n_layer. Throws Error(format) naming a missing or mis-shaped
// tensor, Error(unsupported) for a tensor type the CPU cannot multiply, Error(invalid_argument)
// for a bad range.
ModelWeights bind_weights(const gguf::ModelFile& file, const Hparams& hp, int first, int last);

}  // namespace strata::model
