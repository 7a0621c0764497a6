// block_iq1_s: the one definition of the IQ1_S format, shared by the CPU reference,
// the SIMD kernels' tests and the CUDA kernels (every function here is __host__ __device__).
//
// 256 weights in 50 bytes (1.5625 bits/weight), bit-compatible with ggml:
//   d      binary16 superblock scale
//   qs[32] low 8 bits of the 11-bit grid index of group g (weights 8g..8g+7)
//   qh[8]  one uint16 per 32-weight sub-block s (groups 4s..4s+3):
//          bits 3k..3k+2 = high 3 bits of group 4s+k's index, bits 12-14 = scale code l,
//          bit 15 = sign of the shift delta (set: -1/8, clear: +1/8)
// weight j of group g in sub-block s = d * (2l+1) * (grid[index][j] + delta)
#pragma once

#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"

namespace strata::quant {

inline constexpr int kQK_K = 256;          // weights per superblock (IQ1_S, Q8_K)
inline constexpr int kIq1sGroupSize = 8;   // weights per grid entry
inline constexpr int kIq1sSubBlock = 32;   // weights sharing one scale code and delta
inline constexpr float kIq1sDelta = 0.125f;

struct block_iq1_s {
    uint16_t d;
    uint8_t qs[kQK_K / 8];
    uint16_t qh[kQK_K / 32];
};
static_assert(sizeof(block_iq1_s) == 50, "block_iq1_s must be 50 bytes, as ggml writes it");
static_assert(alignof(block_iq1_s) == 2, "block_iq1_s rows are packed without padding");

// ggml's iq1s_grid: 2048 entries of 8 values in {-1,0,+1}, packed as little-endian int8 bytes.
// Generated from ../shared/fixtures/iq1s/iq1s_grid.npy by tools/gen_iq1s_grid.py.
// Host table; CUDA code builds its __constant__ copy from the same iq1s_grid.inc and passes
// it to the decode functions below, which take the table as a pointer for that reason.
inline constexpr int kIq1sGridSize = 2048;
inline constexpr uint64_t kIq1sGrid[kIq1sGridSize] = {
#include "iq1s_grid.inc"
};

STRATA_HD int iq1s_group_index(const block_iq1_s& b, int g) {
    return int(b.qs[g]) | int((b.qh[g / 4] >> (3 * (g % 4))) & 7u) << 8;
}

STRATA_HD int iq1s_scale_code(const block_iq1_s& b, int s) { return int((b.qh[s] >> 12) & 7u); }

// Odd sub-block multiplier 2l+1 in 1..15.
STRATA_HD int iq1s_sub_scale(const block_iq1_s& b, int s) { return 2 * iq1s_scale_code(b, s) + 1; }

STRATA_HD float iq1s_sub_delta(const block_iq1_s& b, int s) {
    return (b.qh[s] & 0x8000u) ? -kIq1sDelta : kIq1sDelta;
}

STRATA_HD int8_t iq1s_grid_value(uint64_t entry, int j) { return int8_t(uint8_t(entry >> (8 * j))); }

// Decode one group of eight weights. Every product is exact in float32 (see the fixture README),
// so this matches ggml bit for bit, including -0.0 when d == 0.
STRATA_HD void iq1s_decode_group(const block_iq1_s& b, const uint64_t* grid, int g, float out[8]) {
    const int s = g / 4;
    const float dl = f16_to_f32(b.d) * float(iq1s_sub_scale(b, s));
    const float delta = iq1s_sub_delta(b, s);
    const uint64_t entry = grid[iq1s_group_index(b, g)];
    for (int j = 0; j < 8; ++j) out[j] = dl * (float(iq1s_grid_value(entry, j)) + delta);
}

STRATA_HD void iq1s_decode_block(const block_iq1_s& b, const uint64_t* grid, float out[kQK_K]) {
    for (int g = 0; g < kQK_K / 8; ++g) iq1s_decode_group(b, grid, g, out + 8 * g);
}

// The exact integers of one superblock's dot with 256 int8 activations q8 and their 16-sums bsums
// (Q8_K), as every IQ1_S x Q8_K kernel computes them:
//   sumi  = sum_s (2l_s+1) * sum over sub-block s of grid*q8
//   sumi1 = sum_s (2l_s+1) * sign_s * (bsums[2s] + bsums[2s+1])
// so that dot = d_iq1 * d_q8 * (sumi + 1/8 * sumi1). |sumi|, |sumi1| < 2^19: exact in float32.
struct Iq1sBlockSums {
    int32_t sumi;
    int32_t sumi1;
};

STRATA_HD Iq1sBlockSums iq1s_block_sums(const block_iq1_s& b, const uint64_t* grid, const int8_t* q8,
                                        const int16_t* bsums) {
    Iq1sBlockSums r{0, 0};
    for (int s = 0; s < kQK_K / kIq1sSubBlock; ++s) {
        int32_t sub = 0;
        for (int k = 0; k < 4; ++k) {
            const uint64_t entry = grid[iq1s_group_index(b, 4 * s + k)];
            for (int j = 0; j < 8; ++j) sub += int32_t(iq1s_grid_value(entry, j)) * q8[32 * s + 8 * k + j];
        }
        const int32_t ls = iq1s_sub_scale(b, s);
        const int32_t sign = (b.qh[s] & 0x8000u) ? -1 : 1;
        r.sumi += ls * sub;
        r.sumi1 += ls * sign * (int32_t(bsums[2 * s]) + int32_t(bsums[2 * s + 1]));
    }
    return r;
}

}  // namespace strata::quant
