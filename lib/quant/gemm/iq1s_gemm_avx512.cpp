// The AVX-512 VNNI IQ1_S prefill kernels (iq1s_gemm.hpp, iq1s_gemm_panel.hpp); this file alone is compiled with
// AVX-512. Only intrinsics and this file's own static functions are used: an inline function of a
// shared header emitted here could be picked by the linker for portable callers (so no
// f16_to_f32 or iq1s_group_index from iq1s_block.hpp; their arithmetic is written out below).
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#include "iq1s_gemm.hpp"
#include "iq1s_gemm_panel.hpp"

namespace strata::quant::iq1s_gemm_detail {

// Row r of group g from one IQ1_S superblock: w = ls * grid, the 128 * lane-sum correction, the
// signed scales of sumi1 and the fp16 scale.
void pack_row_block_avx512(const block_iq1_s& x, RowGroup& g, int r) {
    uint16_t qh[8];
    std::memcpy(qh, x.qh, sizeof qh);
    // Grid index of group i (sub-block i/4): qs[i] | bits 3(i%4)..3(i%4)+2 of qh[i/4] at bits 8..10.
    const __m512i qh32 = _mm512_cvtepu16_epi32(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qh))));
    const __m512i sel = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i shifts = _mm512_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9);
    const __m512i seven = _mm512_set1_epi32(7);
    __m512i idx[2];
    for (int h = 0; h < 2; ++h) {
        const __m512i sub = _mm512_permutexvar_epi32(_mm512_add_epi32(sel, _mm512_set1_epi32(4 * h)), qh32);
        const __m512i high = _mm512_slli_epi32(_mm512_and_si512(_mm512_srlv_epi32(sub, shifts), seven), 8);
        const __m512i low = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs + 16 * h)));
        idx[h] = _mm512_or_si512(low, high);
    }
    const __m512i zero = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i lane_sums = zero;
    const auto* grid = reinterpret_cast<const long long*>(kIq1sGrid);
    for (int m = 0; m < 4; ++m) {  // sub-blocks 2m and 2m+1: eight grid entries of 8 bytes
        const __m256i i8 = m % 2 == 0 ? _mm512_castsi512_si256(idx[m / 2]) : _mm512_extracti64x4_epi64(idx[m / 2], 1);
        const __m512i e = _mm512_i32gather_epi64(i8, grid, 8);
        const int ls0 = 2 * ((qh[2 * m] >> 12) & 7) + 1, ls1 = 2 * ((qh[2 * m + 1] >> 12) & 7) + 1;
        const __m512i ls = _mm512_mask_blend_epi8(__mmask64(0xffffffff00000000ull), _mm512_set1_epi8(char(ls0)),
                                                  _mm512_set1_epi8(char(ls1)));
        // grid values are -1, 0, +1: w = +ls, 0, -ls.
        const __mmask64 pos = _mm512_cmpgt_epi8_mask(e, zero), neg = _mm512_cmplt_epi8_mask(e, zero);
        const __m512i w = _mm512_mask_sub_epi8(_mm512_maskz_mov_epi8(pos, ls), neg, zero, ls);
        _mm512_storeu_si512(g.w[r] + 64 * m, w);
        lane_sums = _mm512_dpbusd_epi32(lane_sums, ones, w);
    }
    // Lane k of sub-block 2m sits in lane k, of 2m+1 in lane 8+k: add the halves.
    const __m256i corr = _mm256_slli_epi32(
        _mm256_add_epi32(_mm512_castsi512_si256(lane_sums), _mm512_extracti64x4_epi64(lane_sums, 1)), 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.corr[r]), corr);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.corr[r] + 8), corr);
    for (int s = 0; s < 8; ++s) {
        const int ls = 2 * ((qh[s] >> 12) & 7) + 1;
        const int16_t lsg = int16_t((qh[s] & 0x8000u) ? -ls : ls);
        for (int j = 0; j < kIq1sGemmTokenGroup; ++j) g.lsg[s / 2][2 * (2 * r + j) + s % 2] = lsg;
    }
    const float d = _cvtsh_ss(x.d);
    g.d[r] = d;
    for (int j = 0; j < kIq1sGemmTokenGroup; ++j) g.d8[2 * r + j] = d;
}

// kIq1sGemmRowGroup rows x kIq1sGemmTokenGroup tokens over nb superblocks: out[r][j].
void group_product_avx512(int64_t nb, const RowGroup* wg, const ActGroup* ag, GroupOut& out) {
    static_assert(kIq1sGemmRowGroup == 4 && kIq1sGemmTokenGroup == 2, "the register layout below assumes 4 x 2");
    // acc[r]: token 0's eight lane accumulators in the low half, token 1's in the high half.
    // acc1: the sumi1 accumulator of (row r, token j) in lane 2r + j.
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    __m256 acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const ActGroup& a = ag[b];
        const RowGroup& w = wg[b];
        __m512i q[8];
        for (int s = 0; s < 8; ++s) q[s] = _mm512_load_si512(a.q[s]);
        const __m512 yd = _mm512_load_ps(a.d16);
        #pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
            __m512i lanes = _mm512_setzero_si512();
            #pragma GCC unroll 8
            for (int s = 0; s < 8; ++s)
                lanes = _mm512_dpbusd_epi32(
                    lanes, q[s], _mm512_broadcast_i64x4(_mm256_load_si256(reinterpret_cast<const __m256i*>(w.w[r] + 32 * s))));
            lanes = _mm512_sub_epi32(lanes, _mm512_load_si512(w.corr[r]));
            const __m512 d = _mm512_mul_ps(_mm512_set1_ps(w.d[r]), yd);  // d_iq1 * d_q8, as the one-row kernel
            acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(lanes), acc[r]);
        }
        __m256i sumi1 = _mm256_setzero_si256();
        #pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
            sumi1 = _mm256_dpwssd_epi32(sumi1, _mm256_load_si256(reinterpret_cast<const __m256i*>(w.lsg[k])),
                                        _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsp[k])));
        const __m256 d1 = _mm256_mul_ps(_mm256_load_ps(w.d8), _mm256_load_ps(a.d8));
        acc1 = _mm256_fmadd_ps(d1, _mm256_cvtepi32_ps(sumi1), acc1);
    }
    alignas(64) float lanes[4][16], sumi1[8];
    for (int r = 0; r < 4; ++r) _mm512_store_ps(lanes[r], acc[r]);
    _mm256_store_ps(sumi1, acc1);
    for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 2; ++j) {
            const float* l = lanes[r] + 8 * j;
            // ggml's hsum_float_8 order, then h + acc1/8, as the one-row kernel ends.
            const float h = ((l[4] + l[0]) + (l[6] + l[2])) + ((l[5] + l[1]) + (l[7] + l[3]));
            out.v[r][j] = h + kIq1sDelta * sumi1[2 * r + j];
        }
}

}  // namespace strata::quant::iq1s_gemm_detail

#endif  // __x86_64__
