// Q8_K: the activation format that IQ1_S dots with. 256 values as a float32 scale, 256 int8 and
// 16 partial sums, bit-compatible with ggml's block_q8_K.
#pragma once

#include <cstdint>

#include "quant/iq/iq1s_block.hpp"

namespace strata::quant {

struct block_q8_K {
    float d;                    // value j = d * qs[j]; negative when the largest |x| is positive
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];  // bsums[i] = sum of qs[16i .. 16i+15]
};
static_assert(sizeof(block_q8_K) == 292, "block_q8_K must be 292 bytes, as ggml writes it");

// ggml's quantize_row_q8_K_ref, reproduced bit for bit: m = the first element of largest |x|,
// iscale = -127/m, q = round-half-even(float(iscale * x)) clamped at 127, d = 1/iscale.
// An all-zero block gets d = 0, qs = 0 and (unlike ggml, which leaves them unwritten) bsums = 0.
// n must be a multiple of 256. A block holding Inf or NaN gets unspecified (but memory-safe) values,
// as in ggml.
// On AVX-512 CPUs sixteen values at a time (q8_k_avx512.cpp), with the same bits as the
// portable loop, which is also callable on its own (for tests).
void quantize_row_q8_k(const float* x, block_q8_K* y, int64_t n);
void quantize_row_q8_k_portable(const float* x, block_q8_K* y, int64_t n);
void dequantize_row_q8_k(const block_q8_K* x, float* y, int64_t n);

}  // namespace strata::quant
