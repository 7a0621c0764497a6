// IQ2_XXS, IQ2_XS, IQ2_S: ggml's 2-bit "i-quants", bit-compatible with ggml (block_iq2_xxs,
// block_iq2_xs, block_iq2_s). One definition of each format, shared by the CPU row functions, the
// SIMD kernels' tests and the CUDA kernels (every STRATA_HD function here is __host__ __device__
// and takes its lookup tables as pointers, because device code passes its own __constant__ copies).
//
// All three cut a 256-weight superblock into 8 sub-blocks of 32 weights and each sub-block into 4
// groups of 8. A group is one entry of a grid (8 unsigned magnitudes in {8, 25, 43}) plus 8 sign
// bits (bit j set: weight j is negative); sub-block scales are 4-bit codes ls, and
//     weight = d * (0.5 + ls) * 0.25 * grid[index][j] * (sign bit j ? -1 : +1)
// evaluated left to right in float32 as ggml does (every step is exact: at most 22 significant bits).
//
//   IQ2_XXS (66 B)  d, qs[32] (uint16). Sub-block s is the four words qs[4s..4s+3] read as two
//                   little-endian uint32 a (qs[4s], qs[4s+1]) and b (qs[4s+2], qs[4s+3]): byte l of
//                   a is group l's index into the 256-entry grid; bits 7l..7l+6 of b index the sign
//                   table kIq2Signs (7 sign bits, the 8th makes the count of negatives even);
//                   bits 28..31 of b are ls for the whole sub-block.
//   IQ2_XS  (74 B)  d, qs[32] (uint16), scales[8]. Word qs[4s+l] is group l of sub-block s: bits
//                   0..8 index the 512-entry grid, bits 9..15 index kIq2Signs. Groups 0-1 use the
//                   low nibble of scales[s] as ls, groups 2-3 the high nibble.
//   IQ2_S   (82 B)  d, qs[64], qh[8], scales[8]. qs[4s+l] is the low 8 bits of group l's index into
//                   the 1024-entry grid, bits 2l..2l+1 of qh[s] are its bits 8..9; qs[32+4s+l] holds
//                   its 8 sign bits directly (no parity rule). scales as IQ2_XS.
#pragma once

#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"
#include "iq1s_block.hpp"  // kQK_K

namespace strata::quant {

struct block_iq2_xxs {
    uint16_t d;
    uint16_t qs[kQK_K / 8];
};
static_assert(sizeof(block_iq2_xxs) == 66, "block_iq2_xxs must be 66 bytes, as ggml writes it");

struct block_iq2_xs {
    uint16_t d;
    uint16_t qs[kQK_K / 8];
    uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(block_iq2_xs) == 74, "block_iq2_xs must be 74 bytes, as ggml writes it");

struct block_iq2_s {
    uint16_t d;
    uint8_t qs[kQK_K / 4];  // 32 index bytes, then 32 sign bytes
    uint8_t qh[kQK_K / 32];
    uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(block_iq2_s) == 82, "block_iq2_s must be 82 bytes, as ggml writes it");

// ggml's grids (8 bytes per index, byte j = weight j) and ksigns_iq2xs, generated from the gguf
// package by tools/gen_iq_grids.py. Host tables; CUDA code builds __constant__ copies from the same
// .inc files. IQ3_XXS (iq3_block.hpp) uses the same sign table.
inline constexpr uint64_t kIq2xxsGrid[256] = {
#include "iq2xxs_grid.inc"
};
inline constexpr uint64_t kIq2xsGrid[512] = {
#include "iq2xs_grid.inc"
};
inline constexpr uint64_t kIq2sGrid[1024] = {
#include "iq2s_grid.inc"
};
inline constexpr uint8_t kIq2Signs[128] = {
#include "iq2_signs.inc"
};

STRATA_HD int iq2_grid_value(uint64_t entry, int j) { return int((entry >> (8 * j)) & 0xffu); }

// Weights j = 0..7 of one group: db * grid byte * sign, in ggml's order.
STRATA_HD void iq2_decode_group(float db, uint64_t entry, unsigned sign_bits, float out[8]) {
    for (int j = 0; j < 8; ++j) out[j] = db * float(iq2_grid_value(entry, j)) * ((sign_bits >> j) & 1u ? -1.0f : 1.0f);
}

// Sub-block multiplier shared by decode and dot: decode uses (0.5 + ls) * 0.25, the dots 2 ls + 1
// with a final 1/8.
STRATA_HD float iq2_sub_scale(float d, unsigned ls) { return d * (0.5f + float(ls)) * 0.25f; }

// --- IQ2_XXS ---------------------------------------------------------------------------------

STRATA_HD unsigned iq2xxs_sign_word(const block_iq2_xxs& b, int s) {
    return unsigned(b.qs[4 * s + 2]) | unsigned(b.qs[4 * s + 3]) << 16;
}
STRATA_HD int iq2xxs_grid_index(const block_iq2_xxs& b, int s, int l) {
    return int((b.qs[4 * s + l / 2] >> (8 * (l % 2))) & 0xffu);
}
STRATA_HD unsigned iq2xxs_ls(const block_iq2_xxs& b, int s) { return iq2xxs_sign_word(b, s) >> 28; }
STRATA_HD unsigned iq2xxs_signs(const block_iq2_xxs& b, const uint8_t* signs, int s, int l) {
    return signs[(iq2xxs_sign_word(b, s) >> (7 * l)) & 127u];
}

STRATA_HD void iq2xxs_decode_block(const block_iq2_xxs& b, const uint64_t* grid, const uint8_t* signs,
                                   float out[kQK_K]) {
    const float d = f16_to_f32(b.d);
    for (int s = 0; s < 8; ++s) {
        const float db = iq2_sub_scale(d, iq2xxs_ls(b, s));
        for (int l = 0; l < 4; ++l)
            iq2_decode_group(db, grid[iq2xxs_grid_index(b, s, l)], iq2xxs_signs(b, signs, s, l), out + 32 * s + 8 * l);
    }
}

// --- IQ2_XS ----------------------------------------------------------------------------------

STRATA_HD int iq2xs_grid_index(const block_iq2_xs& b, int s, int l) { return int(b.qs[4 * s + l] & 511u); }
STRATA_HD unsigned iq2xs_signs(const block_iq2_xs& b, const uint8_t* signs, int s, int l) {
    return signs[b.qs[4 * s + l] >> 9];
}
// ls of groups 0-1 (half 0) or 2-3 (half 1) of sub-block s; IQ2_S shares the layout.
STRATA_HD unsigned iq2_half_ls(const uint8_t* scales, int s, int half) { return (scales[s] >> (4 * half)) & 15u; }

STRATA_HD void iq2xs_decode_block(const block_iq2_xs& b, const uint64_t* grid, const uint8_t* signs,
                                  float out[kQK_K]) {
    const float d = f16_to_f32(b.d);
    for (int s = 0; s < 8; ++s)
        for (int l = 0; l < 4; ++l) {
            const float db = iq2_sub_scale(d, iq2_half_ls(b.scales, s, l / 2));
            iq2_decode_group(db, grid[iq2xs_grid_index(b, s, l)], iq2xs_signs(b, signs, s, l), out + 32 * s + 8 * l);
        }
}

// --- IQ2_S -----------------------------------------------------------------------------------

STRATA_HD int iq2s_grid_index(const block_iq2_s& b, int s, int l) {
    return int(b.qs[4 * s + l]) | int((b.qh[s] >> (2 * l)) & 3u) << 8;
}
STRATA_HD unsigned iq2s_signs(const block_iq2_s& b, int s, int l) { return b.qs[kQK_K / 8 + 4 * s + l]; }

STRATA_HD void iq2s_decode_block(const block_iq2_s& b, const uint64_t* grid, float out[kQK_K]) {
    const float d = f16_to_f32(b.d);
    for (int s = 0; s < 8; ++s)
        for (int l = 0; l < 4; ++l) {
            const float db = iq2_sub_scale(d, iq2_half_ls(b.scales, s, l / 2));
            iq2_decode_group(db, grid[iq2s_grid_index(b, s, l)], iq2s_signs(b, s, l), out + 32 * s + 8 * l);
        }
}

// --- Integer dot sums ------------------------------------------------------------------------
// The exact integer of one superblock against 256 int8 activations q8 (Q8_K), as ggml's generic
// kernels form it: sum over groups of (2 ls + 1) * grid * q8 * sign. The dot is then
// 1/8 * sum over blocks of (d * d_q8) * that. |sum| <= 8 * 31 * 32 * 43 * 128 < 2^26.

STRATA_HD int32_t iq2_group_sum(uint64_t entry, unsigned sign_bits, const int8_t* q8) {
    int32_t sum = 0;
    for (int j = 0; j < 8; ++j) {
        const int32_t v = iq2_grid_value(entry, j) * int32_t(q8[j]);
        sum += (sign_bits >> j) & 1u ? -v : v;
    }
    return sum;
}

STRATA_HD int32_t iq2xxs_block_sum(const block_iq2_xxs& b, const uint64_t* grid, const uint8_t* signs,
                                   const int8_t* q8) {
    int32_t sum = 0;
    for (int s = 0; s < 8; ++s) {
        int32_t sub = 0;
        for (int l = 0; l < 4; ++l)
            sub += iq2_group_sum(grid[iq2xxs_grid_index(b, s, l)], iq2xxs_signs(b, signs, s, l), q8 + 32 * s + 8 * l);
        sum += int32_t(2 * iq2xxs_ls(b, s) + 1) * sub;
    }
    return sum;
}

STRATA_HD int32_t iq2xs_block_sum(const block_iq2_xs& b, const uint64_t* grid, const uint8_t* signs,
                                  const int8_t* q8) {
    int32_t sum = 0;
    for (int s = 0; s < 8; ++s)
        for (int half = 0; half < 2; ++half) {
            int32_t sub = 0;
            for (int l = 2 * half; l < 2 * half + 2; ++l)
                sub += iq2_group_sum(grid[iq2xs_grid_index(b, s, l)], iq2xs_signs(b, signs, s, l), q8 + 32 * s + 8 * l);
            sum += int32_t(2 * iq2_half_ls(b.scales, s, half) + 1) * sub;
        }
    return sum;
}

STRATA_HD int32_t iq2s_block_sum(const block_iq2_s& b, const uint64_t* grid, const int8_t* q8) {
    int32_t sum = 0;
    for (int s = 0; s < 8; ++s)
        for (int half = 0; half < 2; ++half) {
            int32_t sub = 0;
            for (int l = 2 * half; l < 2 * half + 2; ++l)
                sub += iq2_group_sum(grid[iq2s_grid_index(b, s, l)], iq2s_signs(b, s, l), q8 + 32 * s + 8 * l);
            sum += int32_t(2 * iq2_half_ls(b.scales, s, half) + 1) * sub;
        }
    return sum;
}

// --- Row functions (iq23_decode.cpp, iq23_dot.cpp, iq23_dot_avx2.cpp) -------------------------
// n is a multiple of 256 (not checked: callers validate shapes once). Decoding equals
// gguf.quants.dequantize (and ggml's dequantize_row_*) bit for bit. The dots take n/256 weight
// blocks and n/256 block_q8_K and compute ggml's *_generic arithmetic:
//     sum += (d * d_q8) * float(block_sum) per block (no FMA), result 0.125f * sum.
void decode_row_iq2_xxs(const void* blocks, float* y, int64_t n);
void decode_row_iq2_xs(const void* blocks, float* y, int64_t n);
void decode_row_iq2_s(const void* blocks, float* y, int64_t n);
float vec_dot_iq2_xxs_q8_K(int64_t n, const void* w, const void* x);
float vec_dot_iq2_xs_q8_K(int64_t n, const void* w, const void* x);
float vec_dot_iq2_s_q8_K(int64_t n, const void* w, const void* x);
// AVX2+FMA+F16C CPUs only (x86-64 builds): the same block sums as above, hence the same result bit
// for bit, for activations in [-127, 127] (everything quantize_row_q8_k produces; ggml's AVX2
// kernels make the same assumption, as a q8 of -128 cannot be negated in int8).
float vec_dot_iq2_xxs_q8_K_avx2(int64_t n, const void* w, const void* x);
float vec_dot_iq2_xs_q8_K_avx2(int64_t n, const void* w, const void* x);
float vec_dot_iq2_s_q8_K_avx2(int64_t n, const void* w, const void* x);

}  // namespace strata::quant
