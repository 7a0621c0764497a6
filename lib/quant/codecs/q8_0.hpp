// Q8_0: blocks of 32 values as one binary16 scale and 32 int8, bit-compatible with ggml.
#pragma once

#include <cstdint>

namespace strata::quant {

inline constexpr int kQK8_0 = 32;

struct block_q8_0 {
    uint16_t d;          // binary16 scale
    int8_t qs[kQK8_0];   // value j = d * qs[j]
};
static_assert(sizeof(block_q8_0) == 34, "block_q8_0 must be 34 bytes, as ggml writes it");

// ggml's reference quantizer (quantize_row_q8_0_ref): d = max|x| / 127, q = roundf(x / d)
// computed as x * (1/d), and the scale stored as binary16 of d. n must be a multiple of 32.
void quantize_row_q8_0(const float* x, block_q8_0* y, int64_t n);
void dequantize_row_q8_0(const block_q8_0* x, float* y, int64_t n);

}  // namespace strata::quant
