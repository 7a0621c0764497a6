// Q4_K, Q5_K, Q6_K: ggml's "k-quant" superblocks of 256 weights, bit-compatible with ggml
// (block_q4_K, block_q5_K, block_q6_K). Read only: strata decodes them (llama.cpp's IQ1_S
// mixes keep output, embedding and some attention tensors in them).
//
// Q4_K / Q5_K: 8 sub-blocks of 32 weights; sub-block s has a 6-bit scale sc[s] and a 6-bit
// min m[s] packed in scales[12] (see k_scale_min), and
//     weight = d * sc[s] * q - dmin * m[s]   (q: 4 bits, Q5_K adds a fifth bit from qh)
// evaluated as (d * sc) * q - (dmin * m) in float32, as ggml does.
//   Q4_K qs[128]: weights 64k..64k+31 are the low nibbles of qs[32k..32k+31], weights
//                 64k+32..64k+63 the high nibbles (k = 0..3).
//   Q5_K qh[32]:  bit 2k of qh[l] is the fifth bit of weight 64k + l, bit 2k+1 that of
//                 weight 64k + 32 + l; qs as Q4_K.
// Q6_K: 16 sub-blocks of 16 weights with int8 scales, weight = (d * scales[s]) * (q - 32),
// q: 6 bits (low 4 in ql, high 2 in qh). For each half h (128 weights) and l < 32:
//   weight 128h + l      : low nibble of ql[64h + l],      qh[32h + l] bits 0-1
//   weight 128h + 32 + l : low nibble of ql[64h + 32 + l], qh[32h + l] bits 2-3
//   weight 128h + 64 + l : high nibble of ql[64h + l],     qh[32h + l] bits 4-5
//   weight 128h + 96 + l : high nibble of ql[64h + 32 + l], qh[32h + l] bits 6-7
#pragma once

#include <cstdint>

#include "quant/iq1s_block.hpp"  // kQK_K

namespace strata::quant {

inline constexpr int kKScaleBytes = 12;

struct block_q4_K {
    uint16_t d;     // binary16 scale of the scales
    uint16_t dmin;  // binary16 scale of the mins
    uint8_t scales[kKScaleBytes];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(block_q4_K) == 144, "block_q4_K must be 144 bytes, as ggml writes it");

struct block_q5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleBytes];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(block_q5_K) == 176, "block_q5_K must be 176 bytes, as ggml writes it");

struct block_q6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};
static_assert(sizeof(block_q6_K) == 210, "block_q6_K must be 210 bytes, as ggml writes it");

// The 6-bit scale and min of sub-block s (0..7) of a Q4_K/Q5_K block: for s < 4 the low six
// bits of scales[s] and scales[s + 4]; for s >= 4 the nibbles of scales[s + 4] (low: scale,
// high: min) with the top two bits of scales[s - 4] (scale) and scales[s] (min) above them.
struct KScaleMin {
    uint8_t scale, min;
};
inline KScaleMin k_scale_min(const uint8_t* scales, int s) {
    if (s < 4) return {uint8_t(scales[s] & 63), uint8_t(scales[s + 4] & 63)};
    return {uint8_t((scales[s + 4] & 0x0f) | ((scales[s - 4] >> 6) << 4)),
            uint8_t((scales[s + 4] >> 4) | ((scales[s] >> 6) << 4))};
}

// n must be a multiple of 256.
void dequantize_row_q4_K(const block_q4_K* x, float* y, int64_t n);
void dequantize_row_q5_K(const block_q5_K* x, float* y, int64_t n);
void dequantize_row_q6_K(const block_q6_K* x, float* y, int64_t n);

}  // namespace strata::quant
