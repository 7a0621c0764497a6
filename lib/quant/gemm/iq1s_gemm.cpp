// The IQ1_S prefill products' driver (iq1s_gemm.hpp): panel sizes, packing loops and the tile
// loop, calling the AVX-512 VNNI or AVX2 kernels of iq1s_gemm_panel.hpp.
#include "iq1s_gemm.hpp"

#include <cstring>

#include "iq1s_gemm_panel.hpp"
#include "util/cpu_features.hpp"

namespace strata::quant {

using namespace iq1s_gemm_detail;

namespace {

// Tokens whose packed activations one tile sweeps before the next row group starts: 64 tokens of
// a 5632-wide row are about 400 KiB, which stays in L2 while the tile's row groups use them.
constexpr int64_t kTokenChunk = 64;

bool use_avx512() { return util::has_avx512_vnni_kernels(); }

void clear_row(RowGroup& g, int r) {
    std::memset(g.w[r], 0, sizeof g.w[r]);
    std::memset(g.corr[r], 0, sizeof g.corr[r]);
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < kIq1sGemmTokenGroup; ++j) g.lsg[k][2 * (2 * r + j)] = g.lsg[k][2 * (2 * r + j) + 1] = 0;
    g.d[r] = 0.0f;
    for (int j = 0; j < kIq1sGemmTokenGroup; ++j) g.d8[2 * r + j] = 0.0f;
}

}  // namespace

// AVX2 (+FMA, F16C) at least; the AVX-512 VNNI kernels where the CPU has them.
bool iq1s_gemm_available() { return util::has_avx2_kernels(); }

int64_t iq1s_gemm_min_tokens() { return use_avx512() ? 2 : 8; }

size_t iq1s_gemm_act_bytes(int64_t n, int64_t n_tok) {
    return size_t(groups(n_tok, kIq1sGemmTokenGroup) * (n / kQK_K)) * sizeof(ActGroup);
}

size_t iq1s_gemm_weight_bytes(int64_t n, int64_t n_rows) {
    return size_t(groups(n_rows, kIq1sGemmRowGroup) * (n / kQK_K)) * sizeof(RowGroup);
}

#if defined(__x86_64__)

void iq1s_gemm_pack_act(int64_t n, const block_q8_K* x, int64_t n_tok, void* packed) {
    const int64_t nb = n / kQK_K, n_groups = groups(n_tok, kIq1sGemmTokenGroup);
    auto* out = static_cast<ActGroup*>(packed);
    const block_q8_K zero{};  // padding tokens: zero scale, so they add nothing anywhere
    for (int64_t g = 0; g < n_groups; ++g)
        for (int j = 0; j < kIq1sGemmTokenGroup; ++j) {
            const int64_t t = g * kIq1sGemmTokenGroup + j;
            for (int64_t b = 0; b < nb; ++b) pack_act_block_avx2(t < n_tok ? x[t * nb + b] : zero, out[g * nb + b], j);
        }
}

void iq1s_gemm_detail::pack_weights_with(bool avx512, int64_t n, const block_iq1_s* w, int64_t row_stride_blocks, int64_t n_rows,
                       void* packed) {
    const int64_t nb = n / kQK_K, n_groups = groups(n_rows, kIq1sGemmRowGroup);
    auto* out = static_cast<RowGroup*>(packed);
    for (int64_t g = 0; g < n_groups; ++g)
        for (int r = 0; r < kIq1sGemmRowGroup; ++r) {
            const int64_t row = g * kIq1sGemmRowGroup + r;
            for (int64_t b = 0; b < nb; ++b) {
                RowGroup& dst = out[g * nb + b];
                if (row >= n_rows) clear_row(dst, r);
                else if (avx512) pack_row_block_avx512(w[row * row_stride_blocks + b], dst, r);
                else pack_row_block_avx2(w[row * row_stride_blocks + b], dst, r);
            }
        }
}

void iq1s_gemm_pack_weights(int64_t n, const block_iq1_s* w, int64_t row_stride_blocks, int64_t n_rows, void* packed) {
    iq1s_gemm_detail::pack_weights_with(use_avx512(), n, w, row_stride_blocks, n_rows, packed);
}

void iq1s_gemm_detail::gemm_with(bool avx512, int64_t n, const void* packed_w, int64_t n_rows, const void* packed_act, int64_t t0,
               int64_t n_tok, float* y, int64_t y_stride) {
    const int64_t nb = n / kQK_K;
    const auto* wp = static_cast<const RowGroup*>(packed_w);
    const auto* ap = static_cast<const ActGroup*>(packed_act);
    const auto product = avx512 ? group_product_avx512 : group_product_avx2;
    const int64_t row_groups = groups(n_rows, kIq1sGemmRowGroup);
    const int64_t g_first = t0 / kIq1sGemmTokenGroup, g_end = groups(t0 + n_tok, kIq1sGemmTokenGroup);
    const int64_t chunk = kTokenChunk / kIq1sGemmTokenGroup;
    GroupOut out;
    for (int64_t c0 = g_first; c0 < g_end; c0 += chunk) {
        const int64_t c1 = c0 + chunk < g_end ? c0 + chunk : g_end;
        for (int64_t rg = 0; rg < row_groups; ++rg)
            for (int64_t g = c0; g < c1; ++g) {
                product(nb, wp + rg * nb, ap + g * nb, out);
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

void iq1s_gemm(int64_t n, const void* packed_w, int64_t n_rows, const void* packed_act, int64_t t0, int64_t n_tok,
               float* y, int64_t y_stride) {
    iq1s_gemm_detail::gemm_with(use_avx512(), n, packed_w, n_rows, packed_act, t0, n_tok, y, y_stride);
}

#else  // no x86 kernels: iq1s_gemm_available() is false and callers never get here

void iq1s_gemm_pack_act(int64_t, const block_q8_K*, int64_t, void*) {}
void iq1s_gemm_pack_weights(int64_t, const block_iq1_s*, int64_t, int64_t, void*) {}
void iq1s_gemm(int64_t, const void*, int64_t, const void*, int64_t, int64_t, float*, int64_t) {}

#endif

}  // namespace strata::quant
