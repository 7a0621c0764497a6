// AVX2 IQ1_M x Q8_K kernel (this file alone is compiled with -mavx2 -mfma -mf16c).
//
// Technique, per superblock of 256 weights:
//  - the shift delta is folded into the weights: the kernel multiplies q8 by 8*grid + sign (in
//    {+-9, +-7, +-1}), so one vpmaddubsw/vpmaddwd pair per 32 weights yields 8*sumi1 + sumi2
//    (iq1m_block_sums) where ggml's kernel needs two; the table is indexed by the whole qh nibble
//    (the 11-bit grid index plus the delta sign as bit 11): 4096 entries of 8 bytes;
//  - the 32 twelve-bit indices are formed with byte unpacks (qs byte | qh nibble << 8); each
//    group's entry is fetched with a broadcast load and four of them merged with blends, as in the
//    IQ1_S kernel (GCC moves the indices to scalar registers with vpextrw; forcing them through a
//    stack array instead, or 64-bit extracts and shifts, measured 8% and 18% slower);
//  - |q8| (unsigned, exact for -128) times the weight carrying q8's sign: vpmaddubsw pairs stay
//    within +-2*128*9, so nothing saturates for any int8 activation;
//  - vpmaddwd by the two 16-weight scales (2l+1) of the 32 weights widens to int32 lanes; per lane
//    the superblock total stays below 2^20, exact in float32 after conversion. The float result
//    per superblock is d * (8*sumi1 + sumi2), then 1/8 of the sum, as exact as the scalar
//    d * (sumi1 + sumi2/8); only the rounding order of the accumulation differs.
// Only intrinsics and this file's own functions are used: an inline function from a shared
// header compiled with AVX2 could be picked by the linker for the portable callers too.
#if defined(__x86_64__)

#include <immintrin.h>

#include <array>
#include <cstring>

#include "quant/iq/iq1m_block.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::quant {

namespace {

constexpr int kEntries = 2 * kIq1sGridSize;

// Entry (sign << 11 | index): 8 * grid[index] + (sign ? -1 : +1), bytewise.
constexpr std::array<uint64_t, kEntries> make_signed_grid() {
    std::array<uint64_t, kEntries> out{};
    for (int sign = 0; sign < 2; ++sign)
        for (int i = 0; i < kIq1sGridSize; ++i) {
            uint64_t v = 0;
            for (int j = 0; j < 8; ++j) {
                const int g = int(int8_t(uint8_t(kIq1sGrid[i] >> (8 * j))));
                v |= uint64_t(uint8_t(int8_t(8 * g + (sign ? -1 : 1)))) << (8 * j);
            }
            out[size_t(sign * kIq1sGridSize + i)] = v;
        }
    return out;
}
alignas(64) constexpr std::array<uint64_t, kEntries> kSignedGrid = make_signed_grid();

// pshufb indices that pick, for sub-block s, the scale of unit 2s into every int16 of the low
// 128-bit lane and that of unit 2s+1 into the high lane, from the layout built in unit_scales.
struct ScaleShuffles {
    alignas(32) uint8_t idx[8][32];
};
constexpr ScaleShuffles make_scale_shuffles() {
    ScaleShuffles t{};
    for (int s = 0; s < 8; ++s) {
        const int offset = (s % 2) * 8 + 2 * (s / 2);
        for (int b = 0; b < 32; b += 2) {
            t.idx[s][b] = uint8_t(offset);
            t.idx[s][b + 1] = uint8_t(offset + 1);
        }
    }
    return t;
}
constexpr ScaleShuffles kScaleShuffles = make_scale_shuffles();

// The 16 unit multipliers 2l+1 as int16: 64-bit lane 0 holds units 0,4,8,12, lane 1 units
// 2,6,10,14 (low 128 bits), lane 2 units 1,5,9,13 and lane 3 units 3,7,11,15 (high 128 bits),
// so that one pshufb per sub-block (kScaleShuffles) spreads its two scales over the two lanes.
[[gnu::always_inline]] inline __m256i unit_scales(const block_iq1_m& x) {
    uint64_t words;
    std::memcpy(&words, x.scales, sizeof words);
    const __m256i v = _mm256_srlv_epi64(_mm256_set1_epi64x(static_cast<long long>(words)), _mm256_setr_epi64x(0, 6, 3, 9));
    return _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(v, _mm256_set1_epi16(7)), 1), _mm256_set1_epi16(1));
}

// The 32 twelve-bit table indices: qs[g] | nibble_g << 8.
[[gnu::always_inline]] inline void group_indices(const block_iq1_m& x, uint16_t* idx) {
    const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qh));
    const __m128i m4 = _mm_set1_epi8(0x0f);
    const __m128i nib_even = _mm_and_si128(qh, m4);
    const __m128i nib_odd = _mm_and_si128(_mm_srli_epi16(qh, 4), m4);
    const __m128i nib0 = _mm_unpacklo_epi8(nib_even, nib_odd);  // groups 0..15
    const __m128i nib1 = _mm_unpackhi_epi8(nib_even, nib_odd);  // groups 16..31
    const __m128i qs0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs));
    const __m128i qs1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs + 16));
    _mm_store_si128(reinterpret_cast<__m128i*>(idx), _mm_unpacklo_epi8(qs0, nib0));
    _mm_store_si128(reinterpret_cast<__m128i*>(idx + 8), _mm_unpackhi_epi8(qs0, nib0));
    _mm_store_si128(reinterpret_cast<__m128i*>(idx + 16), _mm_unpacklo_epi8(qs1, nib1));
    _mm_store_si128(reinterpret_cast<__m128i*>(idx + 24), _mm_unpackhi_epi8(qs1, nib1));
}

// Four table entries as one 32-byte vector (entry k in bytes 8k..8k+7).
[[gnu::always_inline]] inline __m256i load_groups(const uint16_t* idx) {
    const uint64_t* t = kSignedGrid.data();
    const __m256i e0 = _mm256_set1_epi64x(static_cast<long long>(t[idx[0]]));
    const __m256i e1 = _mm256_set1_epi64x(static_cast<long long>(t[idx[1]]));
    const __m256i e2 = _mm256_set1_epi64x(static_cast<long long>(t[idx[2]]));
    const __m256i e3 = _mm256_set1_epi64x(static_cast<long long>(t[idx[3]]));
    return _mm256_blend_epi32(_mm256_blend_epi32(e0, e1, 0x0c), _mm256_blend_epi32(e2, e3, 0xc0), 0xf0);
}

[[gnu::always_inline]] inline float block_d(const block_iq1_m& x) {
    uint16_t w[4];
    std::memcpy(w, x.scales, sizeof w);
    const uint16_t bits = uint16_t((w[0] >> 12) | ((w[1] >> 8) & 0x00f0) | ((w[2] >> 4) & 0x0f00) | (w[3] & 0xf000));
    return _cvtsh_ss(bits);
}

// 8 * sumi1 + sumi2 of one superblock, spread over eight int32 lanes.
[[gnu::always_inline]] inline __m256i block_lanes(const block_iq1_m& x, const block_q8_K& y) {
    alignas(32) uint16_t idx[32];
    group_indices(x, idx);
    const __m256i scales = unit_scales(x);
    __m256i acc = _mm256_setzero_si256();
    #pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
        const __m256i q8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs + 32 * s));
        const __m256i w = load_groups(idx + 4 * s);
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(q8), _mm256_sign_epi8(w, q8));
        const __m256i sc = _mm256_shuffle_epi8(scales, _mm256_load_si256(reinterpret_cast<const __m256i*>(kScaleShuffles.idx[s])));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, sc));
    }
    return acc;
}

}  // namespace

float vec_dot_iq1_m_q8_K_avx2(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_iq1_m*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const __m256i lanes = block_lanes(wb[b], xb[b]);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(block_d(wb[b]) * xb[b].d), _mm256_cvtepi32_ps(lanes), acc);
    }
    __m128 h = _mm_add_ps(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return kIq1mDelta * _mm_cvtss_f32(h);
}

}  // namespace strata::quant

#endif  // __x86_64__
