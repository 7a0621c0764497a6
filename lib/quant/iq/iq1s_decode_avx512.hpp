// One IQ1_S superblock decoded with AVX-512 into unsigned bytes, for the AVX-512 kernels only
// (quant/gemm/iq1s_gemm_avx512.cpp packs its panels with it). A one-token AVX-512 kernel built on
// an earlier, gathering form of it was slower on Zen 4 than the AVX2 kernel's broadcast loads and
// blends (10.8 against 17.5 GMAC/s; masked broadcasts in place of the gathers, 7.9). Include this from files
// compiled with AVX-512 and nowhere else, or the linker could pick an AVX-512 copy for a portable
// caller (the functions are static for the same reason).
#pragma once

#if defined(__x86_64__)

#include <immintrin.h>

#include "quant/iq/iq1s_block.hpp"
#include "quant/iq/iq1s_grid_plus_one.hpp"

namespace strata::quant::iq1s_avx512 {

// Per scale code l (ls = 2l + 1): the bytes 16 - ls, 16, 16 + ls at 0..2, what g + 1 = 0, 1, 2 map to.
struct ScaleLuts {
    alignas(16) uint8_t v[8][16];
};
static constexpr ScaleLuts make_scale_luts() {
    ScaleLuts out{};
    for (int l = 0; l < 8; ++l) {
        out.v[l][0] = uint8_t(16 - (2 * l + 1));
        out.v[l][1] = 16;
        out.v[l][2] = uint8_t(16 + (2 * l + 1));
    }
    return out;
}
alignas(64) static constexpr ScaleLuts kScaleLuts = make_scale_luts();

// One IQ1_S superblock as 256 unsigned bytes u = ls * grid + 16, in the weights' order: register m
// holds sub-blocks 2m and 2m+1 (weights 64m..64m+63). The grid entries come in by plain 64-bit
// loads (Zen 4's gathers were the slowest step of packing) and become bytes by one shuffle per
// register: the entry holds g + 1, the sub-block's table 16 - ls, 16, 16 + ls.
[[gnu::always_inline]] static inline void decode_u8(const block_iq1_s& x, const uint16_t* qh, __m512i out[4]) {
    // Grid index of group i (sub-block i/4): qs[i] | bits 3(i%4)..3(i%4)+2 of qh[i/4] at bits 8..10.
    const __m512i qh32 = _mm512_cvtepu16_epi32(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qh))));
    const __m512i sel = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i shifts = _mm512_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9);
    const __m512i seven = _mm512_set1_epi32(7);
    alignas(64) uint32_t idx[32];
    for (int h = 0; h < 2; ++h) {
        const __m512i sub = _mm512_permutexvar_epi32(_mm512_add_epi32(sel, _mm512_set1_epi32(4 * h)), qh32);
        const __m512i high = _mm512_slli_epi32(_mm512_and_si512(_mm512_srlv_epi32(sub, shifts), seven), 8);
        const __m512i low = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs + 16 * h)));
        _mm512_store_si512(idx + 16 * h, _mm512_or_si512(low, high));
    }
    const uint64_t* grid = kIq1sGridPlusOne.data();
    for (int m = 0; m < 4; ++m) {  // eight grid entries of 8 bytes
        const uint32_t* i = idx + 8 * m;
        const __m128i e0 = _mm_set_epi64x(static_cast<long long>(grid[i[1]]), static_cast<long long>(grid[i[0]]));
        const __m128i e1 = _mm_set_epi64x(static_cast<long long>(grid[i[3]]), static_cast<long long>(grid[i[2]]));
        const __m128i e2 = _mm_set_epi64x(static_cast<long long>(grid[i[5]]), static_cast<long long>(grid[i[4]]));
        const __m128i e3 = _mm_set_epi64x(static_cast<long long>(grid[i[7]]), static_cast<long long>(grid[i[6]]));
        const __m512i e = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(e1, e0)), _mm256_set_m128i(e3, e2), 1);
        const __m256i lut0 = _mm256_broadcastsi128_si256(
            _mm_load_si128(reinterpret_cast<const __m128i*>(kScaleLuts.v[(qh[2 * m] >> 12) & 7])));
        const __m256i lut1 = _mm256_broadcastsi128_si256(
            _mm_load_si128(reinterpret_cast<const __m128i*>(kScaleLuts.v[(qh[2 * m + 1] >> 12) & 7])));
        out[m] = _mm512_shuffle_epi8(_mm512_inserti64x4(_mm512_castsi256_si512(lut0), lut1, 1), e);
    }
}

}  // namespace strata::quant::iq1s_avx512

#endif  // __x86_64__
