// The packed panels of the IQ1_S prefill products (iq1s_gemm.hpp), shared by the portable driver
// (iq1s_gemm.cpp) and the kernels: AVX-512 VNNI (iq1s_gemm_avx512.cpp) and AVX2
// (iq1s_gemm_avx2.cpp). Both kernels read the same panels and give the same bits.
#pragma once

#include <cstdint>

#include "iq1s_gemm.hpp"

namespace strata::quant::iq1s_gemm_detail {

// Lanes of the sumi1 products: one int32 per (row r, token j) of a group, lane 2r + j.
inline constexpr int kIq1sGemmPairs = kIq1sGemmRowGroup * kIq1sGemmTokenGroup;

// One superblock of kIq1sGemmTokenGroup tokens.
struct alignas(64) ActGroup {
    // Sub-block s of token 0 then of token 1 (32 bytes each), values q + 128: one 512-bit operand
    // meets a row's sub-block broadcast to both halves, so the lanes come out per token.
    uint8_t q[8][2 * 32];
    // For VPDPWSSD step k, lane 2r + j: bsp[j][2k], bsp[j][2k+1], where bsp[j][s] =
    // bsums[2s] + bsums[2s+1] (sub-block s's sum of q).
    int16_t bsp[4][2 * kIq1sGemmPairs];
    float d16[16];               // token 0's scale x 8, token 1's x 8
    float d8[kIq1sGemmPairs];    // lane 2r + j: token j's scale
};

// One superblock of kIq1sGemmRowGroup rows.
struct alignas(64) RowGroup {
    int8_t w[kIq1sGemmRowGroup][kQK_K];   // ls * grid value, in the weights' order
    int32_t corr[kIq1sGemmRowGroup][16];  // 128 * (lane k's sum of w) in lanes k and 8 + k
    // For VPDPWSSD step k, lane 2r + j: lsg[r][2k], lsg[r][2k+1], where lsg[r][s] = ls * the sign
    // of sub-block s's delta.
    int16_t lsg[4][2 * kIq1sGemmPairs];
    float d8[kIq1sGemmPairs];             // lane 2r + j: row r's scale
    float d[kIq1sGemmRowGroup];           // row r's scale
};

static_assert(sizeof(ActGroup) % 64 == 0 && sizeof(RowGroup) % 64 == 0);

inline int64_t groups(int64_t count, int group) { return (count + group - 1) / group; }

struct GroupOut {
    float v[kIq1sGemmRowGroup][kIq1sGemmTokenGroup];  // v[r][j]: row r, token j of the groups
};

// Row r of a row group from one IQ1_S superblock / token j of a token group from one Q8_K block
// (the AVX2 packers serve both kernels; the AVX-512 weight packer gives the same panel faster).
void pack_row_block_avx512(const block_iq1_s& x, RowGroup& g, int r);
void pack_row_block_avx2(const block_iq1_s& x, RowGroup& g, int r);
void pack_act_block_avx2(const block_q8_K& y, ActGroup& g, int j);

// One row group times one token group over nb superblocks.
void group_product_avx512(int64_t nb, const RowGroup* wg, const ActGroup* ag, GroupOut& out);
void group_product_avx2(int64_t nb, const RowGroup* wg, const ActGroup* ag, GroupOut& out);

// The public calls with the kernel chosen (avx512 false: the AVX2 kernels), for the tests that
// compare both on one machine.
void pack_weights_with(bool avx512, int64_t n, const block_iq1_s* w, int64_t row_stride_blocks, int64_t n_rows,
                       void* packed);
void gemm_with(bool avx512, int64_t n, const void* packed_w, int64_t n_rows, const void* packed_act, int64_t t0,
               int64_t n_tok, float* y, int64_t y_stride);

}  // namespace strata::quant::iq1s_gemm_detail
