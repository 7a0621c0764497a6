// The IQ1_S prefill products' driver (iq1s_gemm.hpp): panel sizes, packing loops and the tile
// loops, calling the AVX-512 VNNI or AVX2 kernels of iq1s_gemm_panel.hpp.
#include "iq1s_gemm.hpp"

#include <algorithm>
#include <cstring>

#include "iq1s_gemm_panel.hpp"
#include "util/cpu_features.hpp"

namespace strata::quant {

using namespace iq1s_gemm_detail;

namespace {

// Tokens whose packed activations the AVX2 tile sweeps before the next row group starts: 64
// tokens of a 5632-wide row are about 400 KiB, which stays in L2 while the tile's row groups use them.
constexpr int64_t kTokenChunk = 64;

bool use_avx512() { return util::has_avx512_vnni_kernels(); }

void clear_row(RowGroup& g, int r) {
    std::memset(g.w[r], 0, sizeof g.w[r]);
    std::memset(g.corr[r], 0, sizeof g.corr[r]);
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < kIq1sGemmTokenGroup; ++j) g.lsg[k][2 * (2 * r + j)] = g.lsg[k][2 * (2 * r + j) + 1] = 0;
    for (int j = 0; j < kIq1sGemmTokenGroup; ++j) g.d8[2 * r + j] = 0.0f;
}

}  // namespace

// AVX2 (+FMA, F16C) at least; the AVX-512 VNNI kernels where the CPU has them.
bool iq1s_gemm_available() { return util::has_avx2_kernels(); }

// bench/bench_iq1s_gemm on a Zen 4 (2048 x 2048, one thread, against the simd one-row kernel per
// token): the VNNI kernel 0.92x at 2 tokens, 1.15x at 3; the AVX2 one 0.89x at 4, 1.41x at 8.
int64_t iq1s_gemm_min_tokens() { return use_avx512() ? 3 : 8; }

size_t iq1s_gemm_detail::act_bytes_with(bool avx512, int64_t n, int64_t n_tok) {
    const auto nb = size_t(n / kQK_K);
    if (avx512) return size_t(n_tok) * nb * sizeof(ActBlock);
    return size_t(groups(n_tok, kIq1sGemmTokenGroup)) * nb * sizeof(ActGroup);
}

size_t iq1s_gemm_detail::weight_bytes_with(bool avx512, int64_t n, int64_t n_rows) {
    const auto nb = size_t(n / kQK_K);
    if (avx512) return size_t(groups(n_rows, kPanelRows)) * nb * sizeof(RowPanel);
    return size_t(groups(n_rows, kIq1sGemmRowGroup)) * nb * sizeof(RowGroup);
}

size_t iq1s_gemm_act_bytes(int64_t n, int64_t n_tok) { return act_bytes_with(use_avx512(), n, n_tok); }
size_t iq1s_gemm_weight_bytes(int64_t n, int64_t n_rows) { return weight_bytes_with(use_avx512(), n, n_rows); }

#if defined(__x86_64__)

void iq1s_gemm_detail::pack_act_with(bool avx512, int64_t n, const block_q8_K* x, int64_t n_tok, void* packed) {
    const int64_t nb = n / kQK_K;
    if (avx512) {
        auto* out = static_cast<ActBlock*>(packed);
        for (int64_t i = 0; i < n_tok * nb; ++i) {
            const block_q8_K& y = x[i];
            ActBlock& a = out[i];
            std::memcpy(a.q, y.qs, sizeof a.q);
            for (int s = 0; s < 8; ++s) a.bsp[s] = int16_t(y.bsums[2 * s] + y.bsums[2 * s + 1]);  // within +-4064
            a.d = y.d;
            std::memset(a.pad, 0, sizeof a.pad);
        }
        return;
    }
    const int64_t n_groups = groups(n_tok, kIq1sGemmTokenGroup);
    auto* out = static_cast<ActGroup*>(packed);
    const block_q8_K zero{};  // padding tokens: zero scale, so they add nothing anywhere
    for (int64_t g = 0; g < n_groups; ++g)
        for (int j = 0; j < kIq1sGemmTokenGroup; ++j) {
            const int64_t t = g * kIq1sGemmTokenGroup + j;
            for (int64_t b = 0; b < nb; ++b) pack_act_block_avx2(t < n_tok ? x[t * nb + b] : zero, out[g * nb + b], j);
        }
}

void iq1s_gemm_pack_act(int64_t n, const block_q8_K* x, int64_t n_tok, void* packed) {
    pack_act_with(use_avx512(), n, x, n_tok, packed);
}

void iq1s_gemm_detail::pack_weights_with(bool avx512, int64_t n, const block_iq1_s* w, int64_t row_stride_blocks,
                                         int64_t n_rows, void* packed) {
    const int64_t nb = n / kQK_K;
    if (avx512) {
        auto* out = static_cast<RowPanel*>(packed);
        for (int64_t g = 0; g < groups(n_rows, kPanelRows); ++g) {
            const int valid = int(std::min<int64_t>(kPanelRows, n_rows - g * kPanelRows));
            for (int64_t b = 0; b < nb; ++b)
                pack_panel_avx512(w + g * kPanelRows * row_stride_blocks, row_stride_blocks, valid, b, out[g * nb + b]);
        }
        return;
    }
    const int64_t n_groups = groups(n_rows, kIq1sGemmRowGroup);
    auto* out = static_cast<RowGroup*>(packed);
    for (int64_t g = 0; g < n_groups; ++g)
        for (int r = 0; r < kIq1sGemmRowGroup; ++r) {
            const int64_t row = g * kIq1sGemmRowGroup + r;
            for (int64_t b = 0; b < nb; ++b) {
                RowGroup& dst = out[g * nb + b];
                if (row >= n_rows) clear_row(dst, r);
                else pack_row_block_avx2(w[row * row_stride_blocks + b], dst, r);
            }
        }
}

void iq1s_gemm_pack_weights(int64_t n, const block_iq1_s* w, int64_t row_stride_blocks, int64_t n_rows, void* packed) {
    pack_weights_with(use_avx512(), n, w, row_stride_blocks, n_rows, packed);
}

namespace {

void gemm_avx512(int64_t nb, const RowPanel* wp, int64_t n_rows, const ActBlock* ap, int64_t t0, int64_t n_tok,
                 float* y, int64_t y_stride) {
    const int64_t panels = groups(n_rows, kPanelRows);
    for (int64_t c0 = 0; c0 < n_tok; c0 += kTokenChunk) {
        const int64_t c1 = std::min(n_tok, c0 + kTokenChunk);
        for (int64_t g = 0; g < panels; ++g) {
            const int valid = int(std::min<int64_t>(kPanelRows, n_rows - g * kPanelRows));
            for (int64_t t = c0; t < c1; t += kPanelTokens)
                panel_product_avx512(nb, wp + g * nb, valid, ap + (t0 + t) * nb, int(std::min<int64_t>(kPanelTokens, c1 - t)),
                                     y + t * y_stride + g * kPanelRows, y_stride);
        }
    }
}

void gemm_avx2(int64_t nb, const RowGroup* wp, int64_t n_rows, const ActGroup* ap, int64_t t0, int64_t n_tok, float* y,
               int64_t y_stride) {
    const int64_t row_groups = groups(n_rows, kIq1sGemmRowGroup);
    const int64_t g_first = t0 / kIq1sGemmTokenGroup, g_end = groups(t0 + n_tok, kIq1sGemmTokenGroup);
    const int64_t chunk = kTokenChunk / kIq1sGemmTokenGroup;
    GroupOut out;
    for (int64_t c0 = g_first; c0 < g_end; c0 += chunk) {
        const int64_t c1 = c0 + chunk < g_end ? c0 + chunk : g_end;
        for (int64_t rg = 0; rg < row_groups; ++rg)
            for (int64_t g = c0; g < c1; ++g) {
                group_product_avx2(nb, wp + rg * nb, ap + g * nb, out);
                for (int j = 0; j < kIq1sGemmTokenGroup; ++j) {
                    const int64_t t = g * kIq1sGemmTokenGroup + j - t0;
                    if (t < 0 || t >= n_tok) continue;
                    for (int r = 0; r < kIq1sGemmRowGroup; ++r) {
                        const int64_t row = rg * kIq1sGemmRowGroup + r;
                        if (row < n_rows) y[t * y_stride + row] = out.v[r][j];
                    }
                }
            }
    }
}

}  // namespace

void iq1s_gemm_detail::gemm_with(bool avx512, int64_t n, const void* packed_w, int64_t n_rows, const void* packed_act,
                                 int64_t t0, int64_t n_tok, float* y, int64_t y_stride) {
    const int64_t nb = n / kQK_K;
    if (avx512)
        gemm_avx512(nb, static_cast<const RowPanel*>(packed_w), n_rows, static_cast<const ActBlock*>(packed_act), t0, n_tok,
                    y, y_stride);
    else
        gemm_avx2(nb, static_cast<const RowGroup*>(packed_w), n_rows, static_cast<const ActGroup*>(packed_act), t0, n_tok, y,
                  y_stride);
}

void iq1s_gemm(int64_t n, const void* packed_w, int64_t n_rows, const void* packed_act, int64_t t0, int64_t n_tok,
               float* y, int64_t y_stride) {
    gemm_with(use_avx512(), n, packed_w, n_rows, packed_act, t0, n_tok, y, y_stride);
}

#else  // no x86 kernels: iq1s_gemm_available() is false and callers never get here

void iq1s_gemm_pack_act(int64_t, const block_q8_K*, int64_t, void*) {}
void iq1s_gemm_pack_weights(int64_t, const block_iq1_s*, int64_t, int64_t, void*) {}
void iq1s_gemm(int64_t, const void*, int64_t, const void*, int64_t, int64_t, float*, int64_t) {}

#endif

}  // namespace strata::quant
