// The AVX2 IQ1_S prefill kernels (iq1s_gemm.hpp, iq1s_gemm_panel.hpp) for CPUs without AVX-512
// VNNI; this file alone is compiled with AVX2. VPMADDUBSW multiplies 32 unsigned activations
// (q + 128, at most 255) by 32 weights (within +-15) into pairs (within +-7650: no saturation),
// VPMADDWD by ones sums them to eight int32 lanes; per superblock the lanes of the eight (row,
// token) pairs are added in integers to S = 8 * sumi + sumi1, and the float step is the scalar
// kernel's. Only intrinsics and this file's own functions are used here (see iq1s_dot_avx2.cpp).
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
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.corr[r]), _mm256_slli_epi32(lane_sums, 7));
    const float d = _cvtsh_ss(x.d);
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
    for (int r = 0; r < kIq1sGemmRowGroup; ++r) g.d8[2 * r + j] = y.d;
}

void group_product_avx2(int64_t nb, const RowGroup* wg, const ActGroup* ag, GroupOut& out) {
    static_assert(kIq1sGemmRowGroup == 4 && kIq1sGemmTokenGroup == 2, "the loops below assume 4 x 2");
    __m256 acc = _mm256_setzero_ps();  // (row r, token j) in lane 2r + j
    const __m256i ones16 = _mm256_set1_epi16(1);
    const __m256 eighth = _mm256_set1_ps(0.125f);
    for (int64_t b = 0; b < nb; ++b) {
        const ActGroup& a = ag[b];
        const RowGroup& w = wg[b];
        __m256i lanes[8];
        #pragma GCC unroll 4
        for (int r = 0; r < 4; ++r)
            #pragma GCC unroll 2
            for (int j = 0; j < 2; ++j) {
                __m256i l = _mm256_setzero_si256();
                #pragma GCC unroll 8
                for (int s = 0; s < 8; ++s) {
                    const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.q[s] + 32 * j));
                    const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(w.w[r] + 32 * s));
                    l = _mm256_add_epi32(l, _mm256_madd_epi16(_mm256_maddubs_epi16(q, wv), ones16));
                }
                lanes[2 * r + j] = _mm256_sub_epi32(l, _mm256_load_si256(reinterpret_cast<const __m256i*>(w.corr[r])));
            }
        // sumi of pair p in lane p: hadd thrice within the 128-bit halves, then add the halves.
        const __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(lanes[0], lanes[1]), _mm256_hadd_epi32(lanes[2], lanes[3]));
        const __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(lanes[4], lanes[5]), _mm256_hadd_epi32(lanes[6], lanes[7]));
        const __m256i sumi = _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
        __m256i sumi1 = _mm256_setzero_si256();
        #pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
            sumi1 = _mm256_add_epi32(sumi1, _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(w.lsg[k])),
                                                              _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsp[k]))));
        // The scalar kernel's step: fma(d_iq1 * d_q8, S / 8, acc), S = 8 * sumi + sumi1 exact.
        const __m256i total = _mm256_add_epi32(_mm256_slli_epi32(sumi, 3), sumi1);
        const __m256 d = _mm256_mul_ps(_mm256_load_ps(w.d8), _mm256_load_ps(a.d8));
        acc = _mm256_fmadd_ps(d, _mm256_mul_ps(_mm256_cvtepi32_ps(total), eighth), acc);
    }
    alignas(32) float v[8];
    _mm256_store_ps(v, acc);
    for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 2; ++j) out.v[r][j] = v[2 * r + j];
}

}  // namespace strata::quant::iq1s_gemm_detail

#endif  // __x86_64__
