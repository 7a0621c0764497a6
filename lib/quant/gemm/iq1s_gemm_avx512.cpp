// The AVX-512 VNNI IQ1_S prefill kernels (iq1s_gemm.hpp, iq1s_gemm_panel.hpp); this file alone is
// compiled with AVX-512. Only intrinsics and this file's own static functions are used: an inline
// function of a shared header emitted here could be picked by the linker for portable callers (so
// no f16_to_f32 or iq1s_group_index from iq1s_block.hpp; their arithmetic is written out below, and
// the grid table is a constexpr array).
#if defined(__x86_64__)

#include <immintrin.h>

#include <array>
#include <cstring>

#include "iq1s_gemm.hpp"
#include "iq1s_gemm_panel.hpp"
#include "quant/iq/iq1s_grid_plus_one.hpp"

namespace strata::quant::iq1s_gemm_detail {

namespace {

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

// Packing writes the panel's layout directly, with no transpose of decoded rows: for group g (the
// grid entry of weights 8g..8g+7) the sixteen rows' entries fill two registers of eight qwords,
// whose low and high dwords are quads 2g and 2g+1 of every row (one two-source permute each).
// The entry's bytes hold grid + 1 = 0, 1, 2; one shuffle per register maps them to ls * grid + 16
// with a table per 128-bit lane: row 4l + j's bytes 16 - ls, 16, 16 + ls at 4j..4j+2, indexed by
// the byte plus 4j. The earlier row-by-row decode and 16 x 16 transposes took 17% of the K2 slice's
// prefill; this takes 11.9 ns per row-superblock against their 21.3 (bench_iq1s_gemm, Zen 4). The
// grid entries come in by plain 64-bit loads: Zen 4's gathers were slower still.
void pack_panel_avx512(const block_iq1_s* w, int64_t row_stride_blocks, int n_valid, int64_t b, RowPanel& p) {
    alignas(64) uint16_t idx[kPanelRows][32];  // grid index of group g of row r
    alignas(64) uint16_t qh[kPanelRows][8];
    alignas(32) uint16_t dh[kPanelRows];
    // Group g's index bits 8..10: bits 3(g % 4).. of qh[g / 4].
    alignas(64) static constexpr uint16_t kSubOfGroup[32] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                                                             4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7};
    alignas(64) static constexpr uint16_t kShiftOfGroup[32] = {0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9,
                                                               0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9};
    const __m512i sub_of_group = _mm512_load_si512(kSubOfGroup);
    const __m512i shift_of_group = _mm512_load_si512(kShiftOfGroup);
    for (int r = 0; r < kPanelRows; ++r) {
        if (r >= n_valid) {  // index 0 reads a real entry; the zero scale table below zeroes its bytes
            _mm512_store_si512(idx[r], _mm512_setzero_si512());
            _mm_store_si128(reinterpret_cast<__m128i*>(qh[r]), _mm_setzero_si128());
            dh[r] = 0;
            continue;
        }
        const block_iq1_s& x = w[r * row_stride_blocks + b];
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qh));
        _mm_store_si128(reinterpret_cast<__m128i*>(qh[r]), q);
        std::memcpy(&dh[r], &x.d, sizeof dh[r]);
        const __m512i low = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs)));
        const __m512i hq = _mm512_permutexvar_epi16(sub_of_group, _mm512_castsi128_si512(q));
        const __m512i high = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hq, shift_of_group), _mm512_set1_epi16(7)), 8);
        _mm512_store_si512(idx[r], _mm512_or_si512(low, high));
    }
    const __mmask16 valid = __mmask16((1u << n_valid) - 1u);

    // qh as four registers of (sub-block 2k, 2k+1) pairs, one int32 per row: register k, lane r.
    __m512i pairs[4];
    {
        __m512i in[4];
        for (int i = 0; i < 4; ++i) in[i] = _mm512_load_si512(qh[4 * i]);  // lane l: row 4i + l
        const __m512i a0 = _mm512_unpacklo_epi32(in[0], in[1]), a1 = _mm512_unpackhi_epi32(in[0], in[1]);
        const __m512i a2 = _mm512_unpacklo_epi32(in[2], in[3]), a3 = _mm512_unpackhi_epi32(in[2], in[3]);
        // Register k now holds row 4i + l at position 4l + i; put it at 4i + l.
        const __m512i to_rows = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
        pairs[0] = _mm512_permutexvar_epi32(to_rows, _mm512_unpacklo_epi64(a0, a2));
        pairs[1] = _mm512_permutexvar_epi32(to_rows, _mm512_unpackhi_epi64(a0, a2));
        pairs[2] = _mm512_permutexvar_epi32(to_rows, _mm512_unpacklo_epi64(a1, a3));
        pairs[3] = _mm512_permutexvar_epi32(to_rows, _mm512_unpackhi_epi64(a1, a3));
    }
    // lsg' = ls * sign - 128 of both sub-blocks of every pair, and the scale tables of the shuffle.
    __m512i luts[8];
    {
        // Scale code l's table bytes: 16 - ls, 16, 16 + ls (ls = 2l + 1); codes are 0..7.
        alignas(64) static constexpr auto kTableOfCode = [] {
            std::array<uint32_t, 16> t{};
            for (uint32_t l = 0; l < 8; ++l) t[l] = (16 - (2 * l + 1)) | 16u << 8 | (16 + (2 * l + 1)) << 16;
            return t;
        }();
        const __m512i by_code = _mm512_load_si512(kTableOfCode.data());
        for (int k = 0; k < 4; ++k) {
            const __m512i v = pairs[k];
            const __m512i ls = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 11), _mm512_set1_epi16(14)),
                                               _mm512_set1_epi16(1));
            const __m512i neg = _mm512_srai_epi16(v, 15);
            const __m512i lsg = _mm512_sub_epi16(_mm512_sub_epi16(_mm512_xor_si512(ls, neg), neg), _mm512_set1_epi16(128));
            _mm512_store_si512(p.lsg[k], _mm512_maskz_mov_epi32(valid, lsg));
            const __m512i code_lo = _mm512_and_si512(_mm512_srli_epi32(v, 12), _mm512_set1_epi32(7));
            const __m512i code_hi = _mm512_and_si512(_mm512_srli_epi32(v, 28), _mm512_set1_epi32(7));
            luts[2 * k] = _mm512_maskz_permutexvar_epi32(valid, code_lo, by_code);
            luts[2 * k + 1] = _mm512_maskz_permutexvar_epi32(valid, code_hi, by_code);
        }
    }
    _mm512_store_ps(p.d, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dh))));

    const uint64_t* grid = kIq1sGridPlusOne.data();
    const __m512i lane_row = _mm512_setr_epi32(0, 0x04040404, 0x08080808, 0x0c0c0c0c, 0, 0x04040404, 0x08080808,
                                               0x0c0c0c0c, 0, 0x04040404, 0x08080808, 0x0c0c0c0c, 0, 0x04040404,
                                               0x08080808, 0x0c0c0c0c);
    const __m512i low_dwords = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i high_dwords = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int g = 0; g < 32; ++g) {
        __m512i half[2];  // rows 8h..8h+7: qword j is row 8h + j's entry
        for (int h = 0; h < 2; ++h) {
            __m128i e[4];
            for (int j = 0; j < 4; ++j) {
                const int r = 8 * h + 2 * j;
                e[j] = _mm_insert_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(grid + idx[r][g])),
                                        static_cast<long long>(grid[idx[r + 1][g]]), 1);
            }
            half[h] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(e[1], e[0])), _mm256_set_m128i(e[3], e[2]), 1);
        }
        const __m512i lut = luts[g / 4];
        const __m512i lo = _mm512_or_si512(_mm512_permutex2var_epi32(half[0], low_dwords, half[1]), lane_row);
        const __m512i hi = _mm512_or_si512(_mm512_permutex2var_epi32(half[0], high_dwords, half[1]), lane_row);
        _mm512_store_si512(p.w[2 * g], _mm512_shuffle_epi8(lut, lo));
        _mm512_store_si512(p.w[2 * g + 1], _mm512_shuffle_epi8(lut, hi));
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
