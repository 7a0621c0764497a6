// TQ1_0 and TQ2_0: ggml's ternary formats (BitNet b1.58, TriLM) of 256 weights in {-1, 0, +1}
// times a binary16 scale, bit-compatible with ggml's block_tq1_0 (54 bytes) and block_tq2_0
// (66 bytes). Both dot with Q8_K activations.
//
// TQ1_0 packs five trits per byte as a fixed-point fraction: a byte b holds trits t0..t4
// (each 0..2) such that trit l is the integer part of 3 * frac(b * 3^l / 256), computed as
// t_l = (uint8_t(b * 3^l) * 3) >> 8, and weight = d * (t_l - 1). Layout of the 256 weights:
//   qs[0..31]   trit l of qs[m]      -> weight 32l + m        (l = 0..4: weights 0..159)
//   qs[32..47]  trit l of qs[32 + m] -> weight 160 + 16l + m  (weights 160..239)
//   qh[0..3]    trit l of qh[m]      -> weight 240 + 4l + m   (l = 0..3: weights 240..255)
// TQ2_0 packs four 2-bit codes per byte: bits 2l..2l+1 of qs[32h + m] is code c of weight
// 128h + 32l + m (h = 0, 1), weight = d * (c - 1) (code 3 gives +2d; ggml's quantizer never
// writes it, but the decode and dot accept it as ggml's do).
#pragma once

#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"
#include "quant/iq/iq1s_block.hpp"  // kQK_K

namespace strata::quant {

struct block_tq1_0 {
    uint8_t qs[(kQK_K - 4 * kQK_K / 64) / 5];  // 48 bytes, five trits each
    uint8_t qh[kQK_K / 64];                    // 4 bytes, four trits each
    uint16_t d;
};
static_assert(sizeof(block_tq1_0) == 54, "block_tq1_0 must be 54 bytes, as ggml writes it");

struct block_tq2_0 {
    uint8_t qs[kQK_K / 4];
    uint16_t d;
};
static_assert(sizeof(block_tq2_0) == 66, "block_tq2_0 must be 66 bytes, as ggml writes it");

// Trit l (0..4) of a TQ1_0 byte, in 0..2.
STRATA_HD int tq1_trit(uint8_t b, int l) {
    uint8_t pow3 = 1;
    for (int i = 0; i < l; ++i) pow3 = uint8_t(pow3 * 3);
    const uint8_t q = uint8_t(b * pow3);  // keeps the fraction: the product mod 256
    return (int(q) * 3) >> 8;
}

// The trits of count bytes, minus one, for l = 0..levels-1: v[l * count + m] from byte m.
STRATA_HD void tq1_unpack(const uint8_t* bytes, int count, int levels, int8_t* v) {
    uint8_t pow3 = 1;
    for (int l = 0; l < levels; ++l, pow3 = uint8_t(pow3 * 3))
        for (int m = 0; m < count; ++m) v[l * count + m] = int8_t(((int(uint8_t(bytes[m] * pow3)) * 3) >> 8) - 1);
}

// The 256 ternary values t - 1 (in -1..1) of a TQ1_0 block, in weight order.
STRATA_HD void tq1_0_values(const block_tq1_0& b, int8_t* v) {
    tq1_unpack(b.qs, 32, 5, v);
    tq1_unpack(b.qs + 32, 16, 5, v + 160);
    tq1_unpack(b.qh, 4, 4, v + 240);
}

// The codes minus one (-1..2) of a TQ2_0 block, in weight order.
STRATA_HD void tq2_0_values(const block_tq2_0& b, int8_t* v) {
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 4; ++l)
            for (int m = 0; m < 32; ++m) v[128 * h + 32 * l + m] = int8_t(((b.qs[32 * h + m] >> (2 * l)) & 3) - 1);
}

// One block to 256 floats, bit for bit as ggml's dequantize_row_tq1_0 / _tq2_0.
STRATA_HD void tq1_0_decode_block(const block_tq1_0& b, float* out) {
    int8_t v[kQK_K];
    tq1_0_values(b, v);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK_K; ++j) out[j] = float(v[j]) * d;
}

STRATA_HD void tq2_0_decode_block(const block_tq2_0& b, float* out) {
    int8_t v[kQK_K];
    tq2_0_values(b, v);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK_K; ++j) out[j] = float(v[j]) * d;
}

// n a multiple of 256 (not checked).
void decode_row_tq1_0(const void* blocks, float* y, int64_t n);
void decode_row_tq2_0(const void* blocks, float* y, int64_t n);

// One row against n Q8_K activations, as ggml_vec_dot_tq{1,2}_0_q8_K_generic: per superblock an
// integer sum of (t - 1) * q8, then sum += float(sumi) * (d_w * d_x).
float vec_dot_tq1_0_q8_K(int64_t n, const void* w, const void* x);
float vec_dot_tq2_0_q8_K(int64_t n, const void* w, const void* x);

}  // namespace strata::quant
