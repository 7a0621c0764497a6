// Q1_0: blocks of 128 weights as one binary16 scale and 128 sign bits (1.125 bits/weight),
// bit-compatible with ggml's block_q1_0 (GGML_TYPE_Q1_0 = 41, 18 bytes).
//   d       binary16 scale (ggml's quantizer writes the mean |x| of the block)
//   qs[16]  bit j % 8 of qs[j / 8] is the sign of weight j: set = +d, clear = -d
// The gguf package has no Q1_0 dequantizer; this follows ggml's dequantize_row_q1_0 and
// ggml_vec_dot_q1_0_q8_0_generic (ggml-quants.c, ggml-cpu/quants.c).
#pragma once

#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"

namespace strata::quant {

inline constexpr int kQK1_0 = 128;

struct block_q1_0 {
    uint16_t d;
    uint8_t qs[kQK1_0 / 8];
};
static_assert(sizeof(block_q1_0) == 18, "block_q1_0 must be 18 bytes, as ggml writes it");

// One block to 128 floats, as ggml: exactly d or -d (so -0.0 for clear bits when d = +0).
STRATA_HD void q1_0_decode_block(const block_q1_0& b, float* out) {
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK1_0; ++j) out[j] = (b.qs[j / 8] >> (j % 8)) & 1u ? d : -d;
}

// n a multiple of 128 (not checked).
void decode_row_q1_0(const void* blocks, float* y, int64_t n);

// One Q1_0 row against n Q8_0 activations: ggml-cpu pairs Q1_0 with vec_dot_type Q8_0, four
// Q8_0 blocks per Q1_0 block. As the generic kernel: for each Q8_0 block k an integer
// sumi_k = sum of (+-q8), then per Q1_0 block s = sum over k of d_x[k] * float(sumi_k) (in
// float, k = 0..3 in order) and sum += d_w * s.
float vec_dot_q1_0_q8_0(int64_t n, const void* w, const void* x);

}  // namespace strata::quant
