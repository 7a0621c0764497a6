// The AVX2 IQ1_S prefill kernels (iq1s_gemm.hpp, iq1s_gemm_panel.hpp) for CPUs without AVX-512
// VNNI, and the activation packer both kernels use; this file alone is compiled with AVX2. The
// products read the AVX-512 kernel's panels: VPMADDUBSW multiplies 32 unsigned activations (q + 128,
// at most 255) by 32 weights (within +-15) into pairs (within +-7650: no saturation), VPMADDWD by
// ones sums them to the eight lanes of the one-row kernel directly. Only intrinsics and this file's
// own functions are used here (see iq1s_dot_avx2.cpp for why).
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#include "iq1s_gemm_panel.hpp"

namespace strata::quant::iq1s_gemm_detail {

void pack_row_block_avx2(const block_iq1_s& x, RowGroup& g, int r) {
    uint16_t qh[8];
    std::memcpy(qh, x.qh, sizeof qh);
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i lane_sums = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
        long long e[4];
        for (int k = 0; k < 4; ++k) {
            const int i = 4 * s + k;  // group i: qs[i] | bits 3k..3k+2 of qh[s] at bits 8..10
            e[k] = static_cast<long long>(kIq1sGrid[x.qs[i] | ((qh[s] >> (3 * k)) & 7) << 8]);
        }
        const int ls = 2 * ((qh[s] >> 12) & 7) + 1;
        // grid values are -1, 0, +1: sign(ls, grid) = +ls, 0, -ls.
        const __m256i w = _mm256_sign_epi8(_mm256_set1_epi8(char(ls)), _mm256_setr_epi64x(e[0], e[1], e[2], e[3]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.w[r] + 32 * s), w);
        lane_sums = _mm256_add_epi32(lane_sums, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, w), ones16));
        const int16_t lsg = int16_t((qh[s] & 0x8000u) ? -ls : ls);
        for (int j = 0; j < kIq1sGemmTokenGroup; ++j) g.lsg[s / 2][2 * (2 * r + j) + s % 2] = lsg;
    }
    const __m256i corr = _mm256_slli_epi32(lane_sums, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.corr[r]), corr);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.corr[r] + 8), corr);
    const float d = _cvtsh_ss(x.d);
    g.d[r] = d;
    for (int j = 0; j < kIq1sGemmTokenGroup; ++j) g.d8[2 * r + j] = d;
}

void pack_act_block_avx2(const block_q8_K& y, ActGroup& g, int j) {
    const __m256i bias = _mm256_set1_epi8(char(0x80));
    for (int s = 0; s < 8; ++s)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.q[s] + 32 * j),
                            _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs + 32 * s)), bias));
    for (int s = 0; s < 8; ++s) {
        const auto bsp = int16_t(y.bsums[2 * s] + y.bsums[2 * s + 1]);  // within +-4064
        for (int r = 0; r < kIq1sGemmRowGroup; ++r) g.bsp[s / 2][2 * (2 * r + j) + s % 2] = bsp;
    }
    for (int k = 0; k < 8; ++k) g.d16[8 * j + k] = y.d;
    for (int r = 0; r < kIq1sGemmRowGroup; ++r) g.d8[2 * r + j] = y.d;
}

void group_product_avx2(int64_t nb, const RowGroup* wg, const ActGroup* ag, GroupOut& out) {
    static_assert(kIq1sGemmRowGroup == 4 && kIq1sGemmTokenGroup == 2, "the loops below assume 4 x 2");
    __m256 acc[4][2];
    for (auto& row : acc) row[0] = row[1] = _mm256_setzero_ps();
    __m256 acc1 = _mm256_setzero_ps();
    const __m256i ones16 = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
        const ActGroup& a = ag[b];
        const RowGroup& w = wg[b];
        #pragma GCC unroll 4
        for (int r = 0; r < 4; ++r)
            #pragma GCC unroll 2
            for (int j = 0; j < 2; ++j) {
                __m256i lanes = _mm256_setzero_si256();
                #pragma GCC unroll 8
                for (int s = 0; s < 8; ++s) {
                    const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.q[s] + 32 * j));
                    const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(w.w[r] + 32 * s));
                    lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(q, wv), ones16));
                }
                lanes = _mm256_sub_epi32(lanes, _mm256_load_si256(reinterpret_cast<const __m256i*>(w.corr[r])));
                const float d = w.d[r] * a.d16[8 * j];  // d_iq1 * d_q8, as the one-row kernel
                acc[r][j] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc[r][j]);
            }
        __m256i sumi1 = _mm256_setzero_si256();
        #pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
            sumi1 = _mm256_add_epi32(sumi1, _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(w.lsg[k])),
                                                              _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsp[k]))));
        const __m256 d1 = _mm256_mul_ps(_mm256_load_ps(w.d8), _mm256_load_ps(a.d8));
        acc1 = _mm256_fmadd_ps(d1, _mm256_cvtepi32_ps(sumi1), acc1);
    }
    alignas(32) float sumi1[8], l[8];
    _mm256_store_ps(sumi1, acc1);
    for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 2; ++j) {
            _mm256_store_ps(l, acc[r][j]);
            // ggml's hsum_float_8 order, then h + acc1/8, as the one-row kernel ends.
            const float h = ((l[4] + l[0]) + (l[6] + l[2])) + ((l[5] + l[1]) + (l[7] + l[3]));
            out.v[r][j] = h + kIq1sDelta * sumi1[2 * r + j];
        }
}

}  // namespace strata::quant::iq1s_gemm_detail

#endif  // __x86_64__
