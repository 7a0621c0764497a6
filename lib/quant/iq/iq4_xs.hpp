// block_iq4_xs: IQ4_NL's non-linear 4-bit codebook (kIq4nlValues) on 256-weight superblocks with
// 6-bit sub-block scales, bit-compatible with ggml (4.25 bits/weight). Every inline function here
// is __host__ __device__; the codebook is passed as a pointer (device code has its own copy).
//   d            binary16 superblock scale
//   scales_h     bits 2s..2s+1 = high two bits of the 6-bit scale code of sub-block s (0..7)
//   scales_l[4]  byte s/2: low nibble = low four bits of sub-block s's code for even s,
//                high nibble for odd s
//   qs[128]      sub-block s (weights 32s..32s+31) in qs[16s..16s+15], packed as IQ4_NL:
//                byte j: low nibble = code of weight 32s+j, high nibble = code of weight 32s+16+j
// weight = (d * (code6 - 32)) * kIq4nlValues[code4], each product rounded to float32 (both are
// exact: d * (code6 - 32) has at most 16 significant bits, times a 7-bit value at most 23).
#pragma once

#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"
#include "iq1s_block.hpp"  // kQK_K
#include "iq4_nl.hpp"      // kIq4nlValues, iq4_code

namespace strata::quant {

inline constexpr int kIq4xsSubBlock = 32;

struct block_iq4_xs {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQK_K / 64];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs must be 136 bytes, as ggml writes it");

// The signed sub-block scale code6 - 32 in -32..31 of sub-block s (0..7).
STRATA_HD int iq4xs_sub_scale(const block_iq4_xs& b, int s) {
    const int lo = (b.scales_l[s / 2] >> (4 * (s % 2))) & 0x0f;
    const int hi = (b.scales_h >> (2 * s)) & 3;
    return (lo | hi << 4) - 32;
}

STRATA_HD void iq4xs_decode_block(const block_iq4_xs& b, const int8_t* values, float out[kQK_K]) {
    const float d = f16_to_f32(b.d);
    for (int s = 0; s < kQK_K / kIq4xsSubBlock; ++s) {
        const float dl = d * float(iq4xs_sub_scale(b, s));
        const uint8_t* qs = b.qs + 16 * s;
        for (int j = 0; j < kIq4xsSubBlock; ++j) out[32 * s + j] = dl * float(values[iq4_code(qs, j)]);
    }
}

// The exact integer of sub-block s against 32 int8 activations q8 (the sub-block's own):
// sum of value * q8, |sum| <= 32 * 127 * 128 < 2^19.
STRATA_HD int32_t iq4xs_sub_sum(const block_iq4_xs& b, const int8_t* values, int s, const int8_t* q8) {
    int32_t sum = 0;
    for (int j = 0; j < kIq4xsSubBlock; ++j) sum += int32_t(values[iq4_code(b.qs + 16 * s, j)]) * q8[j];
    return sum;
}

// Rows; n must be a multiple of 256 (unchecked: callers validate shapes once).
void decode_row_iq4_xs(const void* blocks, float* y, int64_t n);
// ggml_vec_dot_iq4_xs_q8_K_generic's arithmetic (x: n/256 block_q8_K): per sub-block s
// sum = fma(d_iq4 * d_q8 * (code6_s - 32), sumi_s, sum), as GCC compiles ggml's C with FMA.
float vec_dot_iq4_xs_q8_K(int64_t n, const void* w, const void* x);
// Per superblock sum_s (code6_s - 32) * sumi_s (exact), scaled once by d_iq4 * d_q8: the same
// integers in another float order. AVX2+FMA+F16C CPUs only.
float vec_dot_iq4_xs_q8_K_avx2(int64_t n, const void* w, const void* x);

// Importance-weighted IQ4_XS quantizer, ggml's algorithm (quantize_row_iq4_nl_impl on 256/32)
// plus a final +-1 search of each 6-bit sub-block scale code. Element i is weighted by
// imatrix[i] * sqrt(sigma2 + x[i]^2), sigma2 = 2 * sum(x^2) / 256 over its superblock
// (imatrix == nullptr: imatrix[i] taken as 1, as strata's IQ1_S quantizer does).
// n must be a multiple of 256 (0: nothing to do); x and imatrix must be finite (imatrix >= 0).
// Throws strata::Error(Status::invalid_argument) otherwise.
void quantize_row_iq4_xs(const float* x, void* y, int64_t n, const float* imatrix);

}  // namespace strata::quant
