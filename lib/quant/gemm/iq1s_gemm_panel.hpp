// The packed panels of the IQ1_S prefill products (iq1s_gemm.hpp), shared by the portable driver
// (iq1s_gemm.cpp) and the kernels: AVX-512 VNNI (iq1s_gemm_avx512.cpp) and AVX2
// (iq1s_gemm_avx2.cpp). The two kernels read different panels and give the same bits.
#pragma once

#include <cstdint>

#include "iq1s_gemm.hpp"

namespace strata::quant::iq1s_gemm_detail {

inline int64_t groups(int64_t count, int group) { return (count + group - 1) / group; }

// ---- AVX-512 VNNI: 16 rows in the lanes of a register, tokens one by one ----

inline constexpr int kPanelRows = 16;
inline constexpr int kPanelTokens = 8;  // tokens multiplied together (sharing each weight load)

// One superblock of 16 rows.
struct alignas(64) RowPanel {
    uint8_t w[64][kPanelRows][4];  // quad k of row r: ls * grid + 16 of weights 4k..4k+3
    int16_t lsg[4][kPanelRows][2];  // step k, row r: ls * sign - 128 of sub-blocks 2k, 2k+1
    float d[kPanelRows];            // row r's scale
};

// One superblock of one token.
struct alignas(32) ActBlock {
    int8_t q[kQK_K];
    int16_t bsp[8];  // sub-block s's sum of q: bsums[2s] + bsums[2s+1]
    float d;
    uint8_t pad[12];
};

static_assert(sizeof(RowPanel) % 64 == 0 && sizeof(ActBlock) % 32 == 0);

// Rows w[0..n_valid) (row i at w + i * row_stride_blocks) of superblock b into one panel; the
// other rows zero.
void pack_panel_avx512(const block_iq1_s* w, int64_t row_stride_blocks, int n_valid, int64_t b, RowPanel& p);
// 16 rows (n_valid of them stored to y) times n_tok <= kPanelTokens tokens over nb superblocks:
// y[t * y_stride + r] for token t's blocks at act + t * nb.
void panel_product_avx512(int64_t nb, const RowPanel* wp, int n_valid, const ActBlock* act, int n_tok, float* y,
                          int64_t y_stride);

// ---- AVX2: 4 rows x 2 tokens, lane sums added in integers ----

inline constexpr int kIq1sGemmRowGroup = 4;  // rows packed (and multiplied) together

// Lanes of the sumi1 products: one int32 per (row r, token j) of a group, lane 2r + j.
inline constexpr int kIq1sGemmPairs = kIq1sGemmRowGroup * kIq1sGemmTokenGroup;

// One superblock of kIq1sGemmTokenGroup tokens.
struct alignas(64) ActGroup {
    uint8_t q[8][2 * 32];  // sub-block s of token 0 then of token 1 (32 bytes each), values q + 128
    // For VPMADDWD step k, lane 2r + j: bsp[j][2k], bsp[j][2k+1], where bsp[j][s] =
    // bsums[2s] + bsums[2s+1] (sub-block s's sum of q).
    int16_t bsp[4][2 * kIq1sGemmPairs];
    float d8[kIq1sGemmPairs];  // lane 2r + j: token j's scale
};

// One superblock of kIq1sGemmRowGroup rows.
struct alignas(64) RowGroup {
    int8_t w[kIq1sGemmRowGroup][kQK_K];  // ls * grid value, in the weights' order
    int32_t corr[kIq1sGemmRowGroup][8];   // 128 * (lane k's sum of w) in lane k
    // For VPMADDWD step k, lane 2r + j: lsg[r][2k], lsg[r][2k+1], where lsg[r][s] = ls * the sign
    // of sub-block s's delta.
    int16_t lsg[4][2 * kIq1sGemmPairs];
    float d8[kIq1sGemmPairs];  // lane 2r + j: row r's scale
};

static_assert(sizeof(ActGroup) % 64 == 0 && sizeof(RowGroup) % 64 == 0);

struct GroupOut {
    float v[kIq1sGemmRowGroup][kIq1sGemmTokenGroup];  // v[r][j]: row r, token j of the groups
};

// Row r of a row group from one IQ1_S superblock / token j of a token group from one Q8_K block.
void pack_row_block_avx2(const block_iq1_s& x, RowGroup& g, int r);
void pack_act_block_avx2(const block_q8_K& y, ActGroup& g, int j);
// One row group times one token group over nb superblocks.
void group_product_avx2(int64_t nb, const RowGroup* wg, const ActGroup* ag, GroupOut& out);

// ---- The public calls with the kernel chosen (avx512 false: the AVX2 kernels), for the tests and
// the benchmark that compare both on one machine ----

size_t act_bytes_with(bool avx512, int64_t n, int64_t n_tok);
size_t weight_bytes_with(bool avx512, int64_t n, int64_t n_rows);
void pack_act_with(bool avx512, int64_t n, const block_q8_K* x, int64_t n_tok, void* packed);
void pack_weights_with(bool avx512, int64_t n, const block_iq1_s* w, int64_t row_stride_blocks, int64_t n_rows,
                       void* packed);
void gemm_with(bool avx512, int64_t n, const void* packed_w, int64_t n_rows, const void* packed_act, int64_t t0,
               int64_t n_tok, float* y, int64_t y_stride);

}  // namespace strata::quant::iq1s_gemm_detail
