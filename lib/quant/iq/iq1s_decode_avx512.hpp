// One IQ1_S superblock decoded with AVX-512 into unsigned bytes, for the AVX-512 kernels only
// (quant/gemm/iq1s_gemm_avx512.cpp packs its panels with it). Tried for a one-token AVX-512 kernel
// too: on Zen 4 its gathers made decode slower than the AVX2 kernel's broadcast loads and blends
// (10.8 against 17.5 GMAC/s; masked broadcasts in place of the gathers, 7.9). Include this from files
// compiled with AVX-512 and nowhere else, or the linker could pick an AVX-512 copy for a portable
// caller (the functions are static for the same reason).
#pragma once

#if defined(__x86_64__)

#include <immintrin.h>

#include "quant/iq/iq1s_block.hpp"

namespace strata::quant::iq1s_avx512 {

// One IQ1_S superblock as 256 unsigned bytes u = ls * grid + 16, in the weights' order: register m
// holds sub-blocks 2m and 2m+1 (weights 64m..64m+63).
[[gnu::always_inline]] static inline void decode_u8(const block_iq1_s& x, const uint16_t* qh, __m512i out[4]) {
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
    const __m512i zero = _mm512_setzero_si512(), base = _mm512_set1_epi8(16);
    const auto* grid = reinterpret_cast<const long long*>(kIq1sGrid);
    for (int m = 0; m < 4; ++m) {  // eight grid entries of 8 bytes
        const __m256i i8 = m % 2 == 0 ? _mm512_castsi512_si256(idx[m / 2]) : _mm512_extracti64x4_epi64(idx[m / 2], 1);
        const __m512i e = _mm512_i32gather_epi64(i8, grid, 8);
        const int ls0 = 2 * ((qh[2 * m] >> 12) & 7) + 1, ls1 = 2 * ((qh[2 * m + 1] >> 12) & 7) + 1;
        const __m512i ls = _mm512_mask_blend_epi8(__mmask64(0xffffffff00000000ull), _mm512_set1_epi8(char(ls0)),
                                                  _mm512_set1_epi8(char(ls1)));
        // grid values are -1, 0, +1: u = 16 + ls, 16, 16 - ls.
        const __mmask64 pos = _mm512_cmpgt_epi8_mask(e, zero), neg = _mm512_cmplt_epi8_mask(e, zero);
        out[m] = _mm512_mask_sub_epi8(_mm512_mask_add_epi8(base, pos, base, ls), neg, base, ls);
    }
}

}  // namespace strata::quant::iq1s_avx512

#endif  // __x86_64__
