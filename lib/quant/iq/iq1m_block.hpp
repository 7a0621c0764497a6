// block_iq1_m: the one definition of the IQ1_M format, shared by the CPU reference, the SIMD
// kernels' tests and the CUDA kernels (every inline function here is __host__ __device__).
//
// 256 weights in 56 bytes (1.75 bits/weight), bit-compatible with ggml. It reuses IQ1_S's
// 2048-entry ternary grid (kIq1sGrid) but refines IQ1_S's per-32 parameters: a scale per 16
// weights and a shift sign per group of 8. There is no separate d field:
//   qs[32]     low 8 bits of the 11-bit grid index of group g (weights 8g..8g+7)
//   qh[16]     byte h holds groups 2h (low nibble) and 2h+1 (high nibble); in each nibble
//              bits 0-2 = high 3 bits of the group's index, bit 3 = sign of its shift delta
//              (set: -1/8, clear: +1/8)
//   scales[8]  read as four little-endian uint16 words w0..w3. Bits 3k..3k+2 of word i
//              (k = 0..3) are the scale code l of 16-weight unit 4i+k (weights 64i+16k..+15);
//              the top nibbles (bits 12-15) of w0, w1, w2, w3 are, in that order, bits
//              0-3, 4-7, 8-11, 12-15 of the binary16 superblock scale d.
// weight j of group g = d * (2l+1) * (grid[index][j] + delta), l that of unit g/2.
#pragma once

#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"
#include "iq1s_block.hpp"  // kQK_K, kIq1sGrid (the grid IQ1_M shares)

namespace strata::quant {

inline constexpr int kIq1mUnit = 16;          // weights sharing one 3-bit scale code
inline constexpr float kIq1mDelta = 0.125f;   // ggml's IQ1M_DELTA

struct block_iq1_m {
    uint8_t qs[kQK_K / 8];
    uint8_t qh[kQK_K / 16];
    uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(block_iq1_m) == 56, "block_iq1_m must be 56 bytes, as ggml writes it");
static_assert(alignof(block_iq1_m) == 1, "block_iq1_m rows are packed without padding");

// Scales word i (0..3), assembled from bytes so that no unaligned uint16 load is needed.
STRATA_HD uint32_t iq1m_scales_word(const block_iq1_m& b, int i) {
    return uint32_t(b.scales[2 * i]) | uint32_t(b.scales[2 * i + 1]) << 8;
}

// The binary16 bits of d, gathered from the four top nibbles.
STRATA_HD uint16_t iq1m_d_bits(const block_iq1_m& b) {
    return uint16_t((iq1m_scales_word(b, 0) >> 12) | ((iq1m_scales_word(b, 1) >> 8) & 0x00f0u) |
                    ((iq1m_scales_word(b, 2) >> 4) & 0x0f00u) | (iq1m_scales_word(b, 3) & 0xf000u));
}

STRATA_HD float iq1m_d(const block_iq1_m& b) { return f16_to_f32(iq1m_d_bits(b)); }

// The nibble of group g (0..31) in qh: index bits 0-2, delta sign bit 3.
STRATA_HD uint32_t iq1m_group_nibble(const block_iq1_m& b, int g) {
    return uint32_t(b.qh[g / 2] >> (4 * (g % 2))) & 0xfu;
}

STRATA_HD int iq1m_group_index(const block_iq1_m& b, int g) {
    return int(b.qs[g]) | int(iq1m_group_nibble(b, g) & 7u) << 8;
}

STRATA_HD bool iq1m_group_delta_negative(const block_iq1_m& b, int g) { return (iq1m_group_nibble(b, g) & 8u) != 0; }

// Odd multiplier 2l+1 in 1..15 of 16-weight unit u (0..15).
STRATA_HD int iq1m_unit_scale(const block_iq1_m& b, int u) {
    return 2 * int((iq1m_scales_word(b, u / 4) >> (3 * (u % 4))) & 7u) + 1;
}

// Decode one group of eight weights. d * (2l+1) has at most 15 significant bits and
// grid + delta (+-1.125, +-0.875, +-0.125) at most 4, so every product is exact in float32 and
// the result equals ggml's (and the gguf package's float64 arithmetic) bit for bit.
STRATA_HD void iq1m_decode_group(const block_iq1_m& b, const uint64_t* grid, float d, int g, float out[8]) {
    const float dl = d * float(iq1m_unit_scale(b, g / 2));
    const float delta = iq1m_group_delta_negative(b, g) ? -kIq1mDelta : kIq1mDelta;
    const uint64_t entry = grid[iq1m_group_index(b, g)];
    for (int j = 0; j < 8; ++j) out[j] = dl * (float(iq1s_grid_value(entry, j)) + delta);
}

STRATA_HD void iq1m_decode_block(const block_iq1_m& b, const uint64_t* grid, float out[kQK_K]) {
    const float d = iq1m_d(b);
    for (int g = 0; g < kQK_K / 8; ++g) iq1m_decode_group(b, grid, d, g, out + 8 * g);
}

// The exact integers of one superblock's dot with 256 int8 activations q8, as ggml's generic
// IQ1_M x Q8_K kernel computes them:
//   sumi1 = sum_u (2l_u+1) * sum over unit u of grid*q8
//   sumi2 = sum_u (2l_u+1) * sum over groups g of u of sign_g * (sum of q8 over group g)
// so that dot = d_iq1m * d_q8 * (sumi1 + 1/8 * sumi2). |sumi1|, |sumi2| <= 15*256*128 < 2^19,
// so sumi1 + sumi2/8 is exact in float32.
struct Iq1mBlockSums {
    int32_t sumi1;
    int32_t sumi2;
};

STRATA_HD Iq1mBlockSums iq1m_block_sums(const block_iq1_m& b, const uint64_t* grid, const int8_t* q8) {
    Iq1mBlockSums r{0, 0};
    for (int u = 0; u < kQK_K / kIq1mUnit; ++u) {
        int32_t grid_sum = 0, delta_sum = 0;
        for (int k = 0; k < 2; ++k) {
            const int g = 2 * u + k;
            const uint64_t entry = grid[iq1m_group_index(b, g)];
            int32_t q8_sum = 0;
            for (int j = 0; j < 8; ++j) {
                grid_sum += int32_t(iq1s_grid_value(entry, j)) * q8[8 * g + j];
                q8_sum += q8[8 * g + j];
            }
            delta_sum += iq1m_group_delta_negative(b, g) ? -q8_sum : q8_sum;
        }
        const int32_t ls = iq1m_unit_scale(b, u);
        r.sumi1 += ls * grid_sum;
        r.sumi2 += ls * delta_sum;
    }
    return r;
}

// Row functions; n must be a multiple of 256 (unchecked: callers validate shapes once).
void decode_row_iq1_m(const void* blocks, float* y, int64_t n);
// ggml_vec_dot_iq1_m_q8_K_generic's arithmetic: per superblock
// sum = fma(d_iq1m * d_q8, sumi1 + sumi2/8, sum), as GCC compiles ggml's C with FMA.
float vec_dot_iq1_m_q8_K(int64_t n, const void* w, const void* x);  // x: n/256 block_q8_K
// Same exact per-superblock value, formed as (d_iq1m * d_q8) * (8*sumi1 + sumi2) in int32 lanes
// and scaled by 1/8 at the end; only the float accumulation order differs. AVX2+FMA+F16C CPUs only.
float vec_dot_iq1_m_q8_K_avx2(int64_t n, const void* w, const void* x);

// Importance-weighted IQ1_M quantizer (lib/quant/iq/iq1m_quantize.cpp), ggml's algorithm:
// element i of a superblock is weighted by imatrix[i] * sqrt(sigma2 + x[i]^2),
// sigma2 = 2 * sum(x^2) / 256 (imatrix == nullptr: every imatrix[i] taken as 1, as strata's
// IQ1_S quantizer does). n must be a multiple of 256 (0: nothing to do); x and imatrix must be finite
// (imatrix >= 0). Throws strata::Error(Status::invalid_argument) otherwise.
void quantize_row_iq1_m(const float* x, void* y, int64_t n, const float* imatrix);

}  // namespace strata::quant
