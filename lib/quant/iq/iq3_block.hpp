// IQ3_XXS, IQ3_S: ggml's 3-bit "i-quants", bit-compatible with ggml (block_iq3_xxs, block_iq3_s).
// One definition of each format, shared by the CPU row functions, the SIMD kernels' tests and the
// CUDA kernels (STRATA_HD functions take their lookup tables as pointers; see iq2_block.hpp).
//
// A 256-weight superblock has 8 sub-blocks of 32 weights, each of 4 groups of 8 weights; a group is
// two entries of a grid of 4 unsigned magnitudes (weights 0-3 and 4-7) and 8 sign bits.
//   IQ3_XXS (98 B)  d, qs[96]. qs[8s+2l] and qs[8s+2l+1] index the 256-entry grid (values 4, 12, ...,
//                   62) for group l of sub-block s; qs[64+4s..64+4s+3] is a little-endian uint32 w
//                   whose bits 7l..7l+6 index kIq2Signs (iq2_block.hpp) and bits 28..31 are ls;
//                   weight = d * (0.5 + ls) * 0.5 * grid * sign.
//   IQ3_S   (110 B) d, qs[64], qh[8], signs[32], scales[4]. qs[8s+k] (k = 0..7) are the low 8 bits of
//                   the 9-bit index into the 512-entry grid (values 1, 3, ..., 15) of weights
//                   4k..4k+3 of sub-block s, bit k of qh[s] the ninth; signs[4s+l] are group l's 8
//                   sign bits directly; ls of sub-block s is nibble s%2 of scales[s/2] (low first);
//                   weight = d * (1 + 2 ls) * grid * sign.
// Products are evaluated left to right in float32 as ggml does; every step is exact.
#pragma once

#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"
#include "iq2_block.hpp"  // kIq2Signs, kQK_K

namespace strata::quant {

struct block_iq3_xxs {
    uint16_t d;
    uint8_t qs[3 * kQK_K / 8];  // 64 index bytes, then 8 uint32 of signs and scale
};
static_assert(sizeof(block_iq3_xxs) == 98, "block_iq3_xxs must be 98 bytes, as ggml writes it");

struct block_iq3_s {
    uint16_t d;
    uint8_t qs[kQK_K / 4];
    uint8_t qh[kQK_K / 32];
    uint8_t signs[kQK_K / 8];
    uint8_t scales[kQK_K / 64];
};
static_assert(sizeof(block_iq3_s) == 110, "block_iq3_s must be 110 bytes, as ggml writes it");

// ggml's iq3xxs_grid and iq3s_grid (4 bytes per index, byte j = weight j), generated from the gguf
// package by tools/gen_iq_grids.py. Host tables; CUDA code builds __constant__ copies.
inline constexpr uint32_t kIq3xxsGrid[256] = {
#include "iq3xxs_grid.inc"
};
inline constexpr uint32_t kIq3sGrid[512] = {
#include "iq3s_grid.inc"
};

STRATA_HD int iq3_grid_value(uint32_t entry, int j) { return int((entry >> (8 * j)) & 0xffu); }

// Weights j = 0..7 of one group from its two grid entries: db * grid byte * sign, in ggml's order.
STRATA_HD void iq3_decode_group(float db, uint32_t lo, uint32_t hi, unsigned sign_bits, float out[8]) {
    for (int j = 0; j < 8; ++j) {
        const int g = j < 4 ? iq3_grid_value(lo, j) : iq3_grid_value(hi, j - 4);
        out[j] = db * float(g) * ((sign_bits >> j) & 1u ? -1.0f : 1.0f);
    }
}

// Sum over one group of grid * q8 * sign (exact integers).
STRATA_HD int32_t iq3_group_sum(uint32_t lo, uint32_t hi, unsigned sign_bits, const int8_t* q8) {
    int32_t sum = 0;
    for (int j = 0; j < 8; ++j) {
        const int g = j < 4 ? iq3_grid_value(lo, j) : iq3_grid_value(hi, j - 4);
        const int32_t v = g * int32_t(q8[j]);
        sum += (sign_bits >> j) & 1u ? -v : v;
    }
    return sum;
}

// --- IQ3_XXS ---------------------------------------------------------------------------------

STRATA_HD unsigned iq3xxs_sign_word(const block_iq3_xxs& b, int s) {
    const uint8_t* p = b.qs + kQK_K / 4 + 4 * s;
    return unsigned(p[0]) | unsigned(p[1]) << 8 | unsigned(p[2]) << 16 | unsigned(p[3]) << 24;
}
STRATA_HD unsigned iq3xxs_ls(const block_iq3_xxs& b, int s) { return iq3xxs_sign_word(b, s) >> 28; }
STRATA_HD unsigned iq3xxs_signs(const block_iq3_xxs& b, const uint8_t* signs, int s, int l) {
    return signs[(iq3xxs_sign_word(b, s) >> (7 * l)) & 127u];
}

STRATA_HD void iq3xxs_decode_block(const block_iq3_xxs& b, const uint32_t* grid, const uint8_t* signs,
                                   float out[kQK_K]) {
    const float d = f16_to_f32(b.d);
    for (int s = 0; s < 8; ++s) {
        const float db = d * (0.5f + float(iq3xxs_ls(b, s))) * 0.5f;
        for (int l = 0; l < 4; ++l)
            iq3_decode_group(db, grid[b.qs[8 * s + 2 * l]], grid[b.qs[8 * s + 2 * l + 1]], iq3xxs_signs(b, signs, s, l),
                             out + 32 * s + 8 * l);
    }
}

// The exact integer of one superblock against 256 int8 activations (ggml's generic kernel):
// sum over sub-blocks of (2 ls + 1) * sum of grid * q8 * sign; the dot is 1/4 * sum over blocks of
// (d * d_q8) * that. |sum| <= 8 * 31 * 32 * 62 * 128 < 2^26.
STRATA_HD int32_t iq3xxs_block_sum(const block_iq3_xxs& b, const uint32_t* grid, const uint8_t* signs,
                                   const int8_t* q8) {
    int32_t sum = 0;
    for (int s = 0; s < 8; ++s) {
        int32_t sub = 0;
        for (int l = 0; l < 4; ++l)
            sub += iq3_group_sum(grid[b.qs[8 * s + 2 * l]], grid[b.qs[8 * s + 2 * l + 1]], iq3xxs_signs(b, signs, s, l),
                                 q8 + 32 * s + 8 * l);
        sum += int32_t(2 * iq3xxs_ls(b, s) + 1) * sub;
    }
    return sum;
}

// --- IQ3_S -----------------------------------------------------------------------------------

// Index of the grid entry holding weights 4k..4k+3 of sub-block s (k = 0..7).
STRATA_HD int iq3s_grid_index(const block_iq3_s& b, int s, int k) {
    return int(b.qs[8 * s + k]) | int((b.qh[s] >> k) & 1u) << 8;
}
STRATA_HD unsigned iq3s_ls(const block_iq3_s& b, int s) { return (b.scales[s / 2] >> (4 * (s % 2))) & 15u; }

STRATA_HD void iq3s_decode_block(const block_iq3_s& b, const uint32_t* grid, float out[kQK_K]) {
    const float d = f16_to_f32(b.d);
    for (int s = 0; s < 8; ++s) {
        const float db = d * float(1 + 2 * int(iq3s_ls(b, s)));
        for (int l = 0; l < 4; ++l)
            iq3_decode_group(db, grid[iq3s_grid_index(b, s, 2 * l)], grid[iq3s_grid_index(b, s, 2 * l + 1)],
                             b.signs[4 * s + l], out + 32 * s + 8 * l);
    }
}

// As iq3xxs_block_sum; the dot is sum over blocks of (d * d_q8) * that (no final factor).
// |sum| <= 8 * 31 * 32 * 15 * 128 < 2^24.
STRATA_HD int32_t iq3s_block_sum(const block_iq3_s& b, const uint32_t* grid, const int8_t* q8) {
    int32_t sum = 0;
    for (int s = 0; s < 8; ++s) {
        int32_t sub = 0;
        for (int l = 0; l < 4; ++l)
            sub += iq3_group_sum(grid[iq3s_grid_index(b, s, 2 * l)], grid[iq3s_grid_index(b, s, 2 * l + 1)],
                                 b.signs[4 * s + l], q8 + 32 * s + 8 * l);
        sum += int32_t(2 * iq3s_ls(b, s) + 1) * sub;
    }
    return sum;
}

// --- Row functions (iq23_decode.cpp, iq23_dot.cpp, iq23_dot_avx2.cpp) -------------------------
// As in iq2_block.hpp: n a multiple of 256, decoding bit-exact to gguf/ggml, dots in ggml's
// generic arithmetic: sum += (d * d_q8) * float(block_sum) (no FMA); IQ3_XXS returns 0.25f * sum,
// IQ3_S returns sum.
void decode_row_iq3_xxs(const void* blocks, float* y, int64_t n);
void decode_row_iq3_s(const void* blocks, float* y, int64_t n);
float vec_dot_iq3_xxs_q8_K(int64_t n, const void* w, const void* x);
float vec_dot_iq3_s_q8_K(int64_t n, const void* w, const void* x);
// AVX2+FMA+F16C CPUs only (x86-64 builds): the same block sums, hence the same result bit for
// bit, for activations in [-127, 127] (see iq2_block.hpp).
float vec_dot_iq3_xxs_q8_K_avx2(int64_t n, const void* w, const void* x);
float vec_dot_iq3_s_q8_K_avx2(int64_t n, const void* w, const void* x);

}  // namespace strata::quant
