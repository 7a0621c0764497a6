// The AVX-512 VNNI IQ1_S prefill kernels (iq1s_gemm.hpp, iq1s_gemm_panel.hpp); this file alone is
// compiled with AVX-512. Only intrinsics and this file's own static functions are used: an inline
// function of a shared header emitted here could be picked by the linker for portable callers (so
// no f16_to_f32 or iq1s_group_index from iq1s_block.hpp; their arithmetic is written out below, and
// the superblock decoder comes from a header only AVX-512 files include).
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#include "iq1s_gemm.hpp"
#include "iq1s_gemm_panel.hpp"
#include "quant/iq/iq1s_decode_avx512.hpp"

namespace strata::quant::iq1s_gemm_detail {

namespace {

// in[r] = 16 int32 of row r; out[c] = element c of every row (a 16 x 16 transpose).
[[gnu::always_inline]] inline void transpose16(const __m512i in[16], __m512i out[16]) {
    __m512i b[16], c[16];
    for (int i = 0; i < 8; ++i) {
        b[2 * i] = _mm512_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
        b[2 * i + 1] = _mm512_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
    }
    // Within 128-bit lane l, c[4i + j] holds element 4l + j of rows 4i..4i+3.
    for (int i = 0; i < 4; ++i) {
        c[4 * i + 0] = _mm512_unpacklo_epi64(b[4 * i], b[4 * i + 2]);
        c[4 * i + 1] = _mm512_unpackhi_epi64(b[4 * i], b[4 * i + 2]);
        c[4 * i + 2] = _mm512_unpacklo_epi64(b[4 * i + 1], b[4 * i + 3]);
        c[4 * i + 3] = _mm512_unpackhi_epi64(b[4 * i + 1], b[4 * i + 3]);
    }
    for (int j = 0; j < 4; ++j) {
        const __m512i d = _mm512_shuffle_i32x4(c[j], c[4 + j], 0x88), e = _mm512_shuffle_i32x4(c[j], c[4 + j], 0xdd);
        const __m512i f = _mm512_shuffle_i32x4(c[8 + j], c[12 + j], 0x88), g = _mm512_shuffle_i32x4(c[8 + j], c[12 + j], 0xdd);
        out[j] = _mm512_shuffle_i32x4(d, f, 0x88);
        out[4 + j] = _mm512_shuffle_i32x4(e, g, 0x88);
        out[8 + j] = _mm512_shuffle_i32x4(d, f, 0xdd);
        out[12 + j] = _mm512_shuffle_i32x4(e, g, 0xdd);
    }
}

[[gnu::always_inline]] inline int32_t load_i32(const void* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <int T>
void product(int64_t nb, const RowPanel* wp, int n_valid, const ActBlock* act, float* y, int64_t y_stride) {
    __m512 acc[T];
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    const __m512 eighth = _mm512_set1_ps(0.125f);
    for (int64_t b = 0; b < nb; ++b) {
        const RowPanel& p = wp[b];
        const ActBlock* a[T];
        __m512i s[T];
        #pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            a[t] = act + t * nb + b;
            s[t] = _mm512_setzero_si512();
        }
        #pragma GCC unroll 8
        for (int k = 0; k < 64; ++k) {
            const __m512i w = _mm512_load_si512(p.w[k]);
            #pragma GCC unroll 8
            for (int t = 0; t < T; ++t) s[t] = _mm512_dpbusd_epi32(s[t], w, _mm512_set1_epi32(load_i32(a[t]->q + 4 * k)));
        }
        #pragma GCC unroll 8
        for (int t = 0; t < T; ++t) s[t] = _mm512_slli_epi32(s[t], 3);
        #pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const __m512i l = _mm512_load_si512(p.lsg[k]);
            #pragma GCC unroll 8
            for (int t = 0; t < T; ++t) s[t] = _mm512_dpwssd_epi32(s[t], l, _mm512_set1_epi32(load_i32(a[t]->bsp + 2 * k)));
        }
        const __m512 dw = _mm512_load_ps(p.d);
        #pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            // The scalar kernel's step: fma(d_iq1 * d_q8, S / 8, acc), S / 8 exact.
            const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(a[t]->d));
            acc[t] = _mm512_fmadd_ps(d, _mm512_mul_ps(_mm512_cvtepi32_ps(s[t]), eighth), acc[t]);
        }
    }
    const __mmask16 rows = __mmask16((1u << n_valid) - 1u);
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * y_stride, rows, acc[t]);
}

}  // namespace

void pack_panel_avx512(const block_iq1_s* w, int64_t row_stride_blocks, int n_valid, int64_t b, RowPanel& p) {
    __m512i rows[4][kPanelRows];
    for (int r = 0; r < kPanelRows; ++r) {
        if (r >= n_valid) {
            for (auto& m : rows) m[r] = _mm512_setzero_si512();
            for (auto& k : p.lsg) k[r][0] = k[r][1] = 0;
            p.d[r] = 0.0f;
            continue;
        }
        const block_iq1_s& x = w[r * row_stride_blocks + b];
        uint16_t qh[8];
        std::memcpy(qh, x.qh, sizeof qh);
        __m512i u[4];
        iq1s_avx512::decode_u8(x, qh, u);
        for (int m = 0; m < 4; ++m) rows[m][r] = u[m];
        // lsg' = ls * sign - 128 of the eight sub-blocks at once; pair k (sub-blocks 2k, 2k+1) is
        // one int32 of the register.
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qh));
        const __m128i ls = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q, 11), _mm_set1_epi16(14)), _mm_set1_epi16(1));
        const __m128i neg = _mm_srai_epi16(q, 15);
        const __m128i lsg = _mm_sub_epi16(_mm_sub_epi16(_mm_xor_si128(ls, neg), neg), _mm_set1_epi16(128));
        const int32_t pairs[4] = {_mm_cvtsi128_si32(lsg), _mm_extract_epi32(lsg, 1), _mm_extract_epi32(lsg, 2),
                                  _mm_extract_epi32(lsg, 3)};
        for (int k = 0; k < 4; ++k) std::memcpy(p.lsg[k][r], &pairs[k], sizeof pairs[k]);
        p.d[r] = _cvtsh_ss(x.d);
    }
    for (int m = 0; m < 4; ++m) {  // quads 16m..16m+15 of every row
        __m512i cols[16];
        transpose16(rows[m], cols);
        for (int c = 0; c < 16; ++c) _mm512_store_si512(p.w[16 * m + c], cols[c]);
    }
}

void panel_product_avx512(int64_t nb, const RowPanel* wp, int n_valid, const ActBlock* act, int n_tok, float* y,
                          int64_t y_stride) {
    static_assert(kPanelTokens == 8, "the dispatch below covers 1..8 tokens");
    switch (n_tok) {
        case 1: product<1>(nb, wp, n_valid, act, y, y_stride); break;
        case 2: product<2>(nb, wp, n_valid, act, y, y_stride); break;
        case 3: product<3>(nb, wp, n_valid, act, y, y_stride); break;
        case 4: product<4>(nb, wp, n_valid, act, y, y_stride); break;
        case 5: product<5>(nb, wp, n_valid, act, y, y_stride); break;
        case 6: product<6>(nb, wp, n_valid, act, y, y_stride); break;
        case 7: product<7>(nb, wp, n_valid, act, y, y_stride); break;
        case 8: product<8>(nb, wp, n_valid, act, y, y_stride); break;
        default: break;
    }
}

}  // namespace strata::quant::iq1s_gemm_detail

#endif  // __x86_64__
