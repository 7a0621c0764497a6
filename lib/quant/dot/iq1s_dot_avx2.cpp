// AVX2 IQ1_S x Q8_K kernel (this file alone is compiled with -mavx2 -mfma -mf16c).
//
// Technique, per superblock of 256 weights:
//  - the 32 eleven-bit grid indices are computed with SIMD (instead of 4-5 scalar ops each) and
//    parked in a small stack array, from which each group's 8-byte grid entry is fetched with a
//    broadcast load (a pure load uop) and four of them are merged with blends (no shuffle port);
//  - the table holds grid+1 in {0,1,2}, so vpmaddubsw (unsigned x signed) takes it directly:
//    pairs of (g+1)*q8 (within +-512: no saturation) minus pairs of 1*q8 give pairs of g*q8 exactly;
//  - vpmaddwd by the sub-block scale 2l+1 widens to eight int32 lanes, in ggml's lane order, so the
//    float32 accumulation below can follow ggml's AVX2 kernel operation for operation (bit-exact);
//  - GEMV runs rows in groups of four against the same Q8_K block, sharing the activation loads
//    and the 1*q8 pairs (vec_dot_iq1s_q8k_avx2_rows); every row still gets the one-row result.
// Only intrinsics and this file's own static functions are used here: an inline function from a
// shared header compiled with AVX2 could be picked by the linker for the portable callers too.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "iq1s_dot.hpp"
#include "quant/iq/iq1s_grid_plus_one.hpp"

namespace strata::quant {

namespace {

// Four grid entries as one 32-byte vector (entry k in bytes 8k..8k+7).
[[gnu::always_inline]] inline __m256i load_groups(const uint16_t* idx) {
    const uint64_t* grid = kIq1sGridPlusOne.data();
    const __m256i e0 = _mm256_set1_epi64x(static_cast<long long>(grid[idx[0]]));
    const __m256i e1 = _mm256_set1_epi64x(static_cast<long long>(grid[idx[1]]));
    const __m256i e2 = _mm256_set1_epi64x(static_cast<long long>(grid[idx[2]]));
    const __m256i e3 = _mm256_set1_epi64x(static_cast<long long>(grid[idx[3]]));
    return _mm256_blend_epi32(_mm256_blend_epi32(e0, e1, 0x0c), _mm256_blend_epi32(e2, e3, 0xc0), 0xf0);
}

[[gnu::always_inline]] inline int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x55));
    return _mm_cvtsi128_si32(s);
}

// Software prefetch of each row's superblock kPrefetchBlocks ahead (32 x 50 bytes = 1.6 KB). A
// GEMV tile reads R rows as R interleaved streams one row apart; the hardware prefetchers did not
// keep them ahead of the kernel: weights from DRAM cost ~19 ns per superblock against ~13 ns from
// cache, and this prefetch took 1b IQ1_S decode from 12 to 17 tok/s on one Zen 4 thread. A
// prefetch past the end of a row or of the matrix does not fault (it is a hint).
constexpr int64_t kPrefetchBlocks = 32;

template <int R>
[[gnu::always_inline]] inline void prefetch_ahead(const block_iq1_s* const* x, int64_t b) {
    #pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        // The address as an integer: a pointer past the row's end would be out-of-bounds arithmetic.
        const uintptr_t ahead = reinterpret_cast<uintptr_t>(x[r]) + uintptr_t(b + kPrefetchBlocks) * sizeof(block_iq1_s);
        _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
    }
}

// What the sub-block loop needs of one IQ1_S superblock: its 32 grid indices and its eight
// scales as (ls, ls) int16 pairs for vpmaddwd, parked on the stack (read back by pure loads).
struct BlockPrep {
    alignas(32) uint16_t idx[32];
    alignas(16) int32_t ls_pairs[8];
    __m128i qh;
};

// The eight sub-blocks' ls = 2l+1 and ls * sign (sign: bit 15 of qh) as int16.
[[gnu::always_inline]] inline __m128i scales(__m128i qh) {
    return _mm_or_si128(_mm_and_si128(_mm_srli_epi16(qh, 11), _mm_set1_epi16(14)), _mm_set1_epi16(1));
}
[[gnu::always_inline]] inline __m128i signed_scales(__m128i qh, __m128i ls) {
    const __m128i neg = _mm_srai_epi16(qh, 15);
    return _mm_sub_epi16(_mm_xor_si128(ls, neg), neg);
}

[[gnu::always_inline]] inline void prep_block(const block_iq1_s& x, BlockPrep& p) {
    const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qh));
    p.qh = qh;
    // index of group g = qs[g] | bits 3(g%4)..3(g%4)+2 of qh[g/4] at bits 8..10. Each qh word is
    // repeated for its four groups and multiplied by 2^9, 2^6, 2^3, 1 to put the three bits at
    // 9..11, then >> 1 (a left shift by 8-3k cannot serve k = 3).
    const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs));
    const __m256i qh2 = _mm256_broadcastsi128_si256(qh);
    const __m256i rep_lo = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3,  //
                                            4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7);
    const __m256i rep_hi = _mm256_setr_epi8(8, 9, 8, 9, 8, 9, 8, 9, 10, 11, 10, 11, 10, 11, 10, 11,  //
                                            12, 13, 12, 13, 12, 13, 12, 13, 14, 15, 14, 15, 14, 15, 14, 15);
    const __m256i mul = _mm256_setr_epi16(512, 64, 8, 1, 512, 64, 8, 1, 512, 64, 8, 1, 512, 64, 8, 1);
    const __m256i mask = _mm256_set1_epi16(0x0700);
    const __m256i hi_lo =
        _mm256_and_si256(_mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh2, rep_lo), mul), 1), mask);
    const __m256i hi_hi =
        _mm256_and_si256(_mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh2, rep_hi), mul), 1), mask);
    _mm256_store_si256(reinterpret_cast<__m256i*>(p.idx),
                       _mm256_or_si256(_mm256_cvtepu8_epi16(_mm256_castsi256_si128(qs)), hi_lo));
    _mm256_store_si256(reinterpret_cast<__m256i*>(p.idx + 16),
                       _mm256_or_si256(_mm256_cvtepu8_epi16(_mm256_extracti128_si256(qs, 1)), hi_hi));
    // ls = 2l+1 = ((qh >> 11) & 14) | 1.
    const __m128i ls = scales(qh);
    _mm_store_si128(reinterpret_cast<__m128i*>(p.ls_pairs), _mm_unpacklo_epi16(ls, ls));
    _mm_store_si128(reinterpret_cast<__m128i*>(p.ls_pairs + 4), _mm_unpackhi_epi16(ls, ls));
}

// sumi1's eight products ls_s * sign_s * bsums[2s(+1)] as lanes via one vpmaddwd (they add up
// to sumi1 = sum_s ls_s * sign_s * (bsums[2s] + bsums[2s+1])).
// m_s for bsums[2s] and bsums[2s+1] through one vpmaddwd.
[[gnu::always_inline]] inline __m256i madd_pairs(__m256i bsums, __m128i m) {
    return _mm256_madd_epi16(bsums, _mm256_set_m128i(_mm_unpackhi_epi16(m, m), _mm_unpacklo_epi16(m, m)));
}

[[gnu::always_inline]] inline __m256i block_sumi1_lanes(const BlockPrep& p, __m256i bsums) {
    return madd_pairs(bsums, signed_scales(p.qh, scales(p.qh)));
}

// The eight lane integers of superblock b of R rows against the same Q8_K block, and the rows'
// prepared blocks (for sumi1). R > 1
// shares the activation loads and the 1*q8 pairs between rows (measured per row: R = 2 about 15%,
// R = 4 about 20% faster than R = 1). Each row's arithmetic is the same for every R, so results do
// not depend on how rows are grouped.
// kPlusOne: the lanes of (g + 1) instead of g (sum ls * (g+1) * q8), one subtraction fewer per
// sub-block and row, for callers that take ls * sum(q8) off the total from the block sums.
template <int R, bool kPlusOne = false>
[[gnu::always_inline]] inline void block_lanes(const block_iq1_s* const* x, int64_t b, const block_q8_K& y,
                                               __m256i* lanes, BlockPrep* p) {
    #pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        prep_block(x[r][b], p[r]);
        lanes[r] = _mm256_setzero_si256();
    }
    const __m256i ones = _mm256_set1_epi8(1);
    for (int s = 0; s < 8; ++s) {
        const __m256i q8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs + 32 * s));
        __m256i q8_pairs = _mm256_setzero_si256();
        if constexpr (!kPlusOne) q8_pairs = _mm256_maddubs_epi16(ones, q8);
        #pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            __m256i pairs = _mm256_maddubs_epi16(load_groups(p[r].idx + 4 * s), q8);
            if constexpr (!kPlusOne) pairs = _mm256_sub_epi16(pairs, q8_pairs);
            lanes[r] = _mm256_add_epi32(lanes[r], _mm256_madd_epi16(pairs, _mm256_set1_epi32(p[r].ls_pairs[s])));
        }
    }
}

template <int R>
[[gnu::always_inline]] inline void block_lanes_sumi1(const block_iq1_s* const* x, int64_t b, const block_q8_K& y,
                                                     __m256i* lanes, int32_t* sumi1) {
    BlockPrep p[R];
    block_lanes<R>(x, b, y, lanes, p);
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums));
    #pragma GCC unroll 4
    for (int r = 0; r < R; ++r) sumi1[r] = hsum_epi32(block_sumi1_lanes(p[r], bsums));
}

template <int R>
[[gnu::always_inline]] inline void dot_rows(int64_t n, const block_iq1_s* const* x, const block_q8_K* y, float* out) {
    __m256 acc[R];
    __m128 acc1[R];
    #pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        acc[r] = _mm256_setzero_ps();
        acc1[r] = _mm_setzero_ps();
    }
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        prefetch_ahead<R>(x, b);
        __m256i lanes[R];
        int32_t sumi1[R];
        block_lanes_sumi1<R>(x, b, y[b], lanes, sumi1);
        #pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            // d = d_q8 * d_iq1, then acc += d * lanes and acc1 += d * sumi1, each one FMA, as ggml does.
            const __m128 d = _mm_mul_ss(_mm_set_ss(y[b].d), _mm_cvtph_ps(_mm_cvtsi32_si128(x[r][b].d)));
            acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(d), _mm256_cvtepi32_ps(lanes[r]), acc[r]);
            acc1[r] = _mm_fmadd_ss(d, _mm_cvtsi32_ss(_mm_setzero_ps(), sumi1[r]), acc1[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        // ggml's hsum_float_8 order: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
        __m128 h = _mm_add_ps(_mm256_extractf128_ps(acc[r], 1), _mm256_castps256_ps128(acc[r]));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        // h + 1/8 * acc1: the product is exact, so FMA or not gives the same float.
        out[r] = _mm_cvtss_f32(_mm_add_ss(h, _mm_mul_ss(_mm_set_ss(kIq1sDelta), acc1[r])));
    }
}

// With lanes of (g + 1): S = 8 * L + sum_s (ls_s * sign_s - 8 * ls_s) * B_s, where L is the sum of
// ls * (g+1) * q8 and B_s = bsums[2s] + bsums[2s+1], so 8 * sumi + sumi1 as one vpmaddwd.
[[gnu::always_inline]] inline __m256i block_offset_lanes(const BlockPrep& p, __m256i bsums) {
    const __m128i ls = scales(p.qh);
    return madd_pairs(bsums, _mm_sub_epi16(signed_scales(p.qh, ls), _mm_slli_epi16(ls, 3)));
}

// Rows' integer sums S = 8 * sumi + sumi1 of superblock b, R of them in the low R lanes: each
// row's lanes (8 * its (g + 1) lanes + its offset products) added in integer arithmetic (exact, so
// the order does not matter), all in registers (a stack round trip stalled store forwarding: 10%).
template <int R>
[[gnu::always_inline]] inline __m128i block_totals(const block_iq1_s* const* x, int64_t b, const block_q8_K& y) {
    BlockPrep p[R];
    __m256i l[4];
    block_lanes<R, true>(x, b, y, l, p);
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums));
    #pragma GCC unroll 4
    for (int r = 0; r < R; ++r) l[r] = _mm256_add_epi32(_mm256_slli_epi32(l[r], 3), block_offset_lanes(p[r], bsums));
    for (int r = R; r < 4; ++r) l[r] = _mm256_setzero_si256();
    // hadd twice leaves row r's partial sums in lane r of each 128-bit half; add the halves.
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(l[0], l[1]), _mm256_hadd_epi32(l[2], l[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// The rows' fp16 scales as float32 lanes.
template <int R>
[[gnu::always_inline]] inline __m128 row_scales(const block_iq1_s* const* x, int64_t b) {
    __m128i h = _mm_cvtsi32_si128(x[0][b].d);
    if constexpr (R > 1) h = _mm_insert_epi16(h, x[1][b].d, 1);
    if constexpr (R > 2) h = _mm_insert_epi16(h, x[2][b].d, 2);
    if constexpr (R > 3) h = _mm_insert_epi16(h, x[3][b].d, 3);
    return _mm_cvtph_ps(h);
}

// The scalar kernel's float steps, R rows in the lanes of one register: per superblock
// acc = fma(d_iq1 * d_q8, S / 8, acc), where S / 8 == sumi + sumi1 / 8 exactly (|S| < 2^24).
template <int R>
[[gnu::always_inline]] inline void dot_rows_simd(int64_t n, const block_iq1_s* const* x, const block_q8_K* y, float* out) {
    __m128 acc = _mm_setzero_ps();
    const __m128 eighth = _mm_set1_ps(kIq1sDelta);
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        prefetch_ahead<R>(x, b);
        const __m128 d = _mm_mul_ps(row_scales<R>(x, b), _mm_set1_ps(y[b].d));
        const __m128 s = _mm_mul_ps(_mm_cvtepi32_ps(block_totals<R>(x, b, y[b])), eighth);
        acc = _mm_fmadd_ps(d, s, acc);
    }
    alignas(16) float o[4];
    _mm_store_ps(o, acc);
    for (int r = 0; r < R; ++r) out[r] = o[r];
}

// Rows in groups of four sharing each activation load, then a pair, then one; kernel(R, group,
// out) runs one group, R a std::integral_constant.
template <typename Kernel>
void for_row_groups(const block_iq1_s* x, int64_t row_stride_blocks, int64_t rows, float* out, Kernel kernel) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const block_iq1_s* group[4] = {x + r * row_stride_blocks, x + (r + 1) * row_stride_blocks,
                                       x + (r + 2) * row_stride_blocks, x + (r + 3) * row_stride_blocks};
        kernel(std::integral_constant<int, 4>{}, group, out + r);
    }
    for (; r + 2 <= rows; r += 2) {
        const block_iq1_s* group[2] = {x + r * row_stride_blocks, x + (r + 1) * row_stride_blocks};
        kernel(std::integral_constant<int, 2>{}, group, out + r);
    }
    if (r < rows) {
        const block_iq1_s* group[1] = {x + r * row_stride_blocks};
        kernel(std::integral_constant<int, 1>{}, group, out + r);
    }
}

}  // namespace

Iq1sLaneSums iq1s_lane_sums_avx2(const block_iq1_s& x, const block_q8_K& y) {
    Iq1sLaneSums r{};
    const block_iq1_s* rows[1] = {&x};
    __m256i lanes[1];
    block_lanes_sumi1<1>(rows, 0, y, lanes, &r.sumi1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(r.lane), lanes[0]);
    return r;
}

void vec_dot_iq1s_q8k_avx2_rows(int64_t n, const block_iq1_s* x, int64_t row_stride_blocks, int64_t rows,
                                const block_q8_K* y, float* out) {
    for_row_groups(x, row_stride_blocks, rows, out,
                   [&](auto R, const block_iq1_s* const* group, float* o) { dot_rows<R.value>(n, group, y, o); });
}

void vec_dot_iq1s_q8k_simd_rows(int64_t n, const block_iq1_s* x, int64_t row_stride_blocks, int64_t rows,
                                const block_q8_K* y, float* out) {
    for_row_groups(x, row_stride_blocks, rows, out,
                   [&](auto R, const block_iq1_s* const* group, float* o) { dot_rows_simd<R.value>(n, group, y, o); });
}

// One row: the grouped kernels with a single group of one.
float vec_dot_iq1s_q8k_avx2(int64_t n, const block_iq1_s* x, const block_q8_K* y) {
    float out;
    vec_dot_iq1s_q8k_avx2_rows(n, x, 0, 1, y, &out);
    return out;
}

float vec_dot_iq1s_q8k_simd(int64_t n, const block_iq1_s* x, const block_q8_K* y) {
    float out;
    vec_dot_iq1s_q8k_simd_rows(n, x, 0, 1, y, &out);
    return out;
}

}  // namespace strata::quant

#endif  // __x86_64__
