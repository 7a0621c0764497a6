// AVX2 K-quant x Q8_K dots: Q4_K, Q5_K, Q6_K (the types Kimi releases keep their attention, shared
// experts and output in) and Q2_K, Q3_K (the experts of llama.cpp's Q2_K/Q3_K mixes). This file
// alone is compiled with -mavx2 -mfma -mf16c.
//
// Per block each kernel forms the same integers as k_quants.hpp's *_block_sums (sumi, summs),
// with only the float order changed: eight int32 lanes of sumi go into eight float32 lane
// accumulators with one FMA per block (acc += d_w * d_q8 * lanes), the mins (Q2_K: into the
// same accumulator, first; Q4_K: four lanes of their own; Q5_K: one float) likewise, all summed
// horizontally at the end of the row. That is the float order of ggml's own AVX2 kernels, whose
// results these equal bit for bit (checked against llama.cpp's x86 build on random rows; not a
// requirement, but strata's logits then match llama.cpp's).
//  - codes (0..3, 0..15, 0..31, 0..63) are unsigned, so vpmaddubsw (unsigned x signed) takes them
//    with the int8 activations directly: pairs stay within +-2*63*128, no saturation; Q3_K's
//    signed codes are its two low bits minus 4 where the high bit is clear, two vpmaddubsw;
//  - vpmaddwd by the sub-block scale (one shuffle of a broadcast scale vector) widens to int32;
//  - mins: Q4_K/Q5_K the 16 bsums summed in pairs (one per 32-weight sub-block) times the mins,
//    Q2_K the 16 bsums times its 16 mins;
//  - Q6_K's -32 offset is not subtracted per weight: sum sc*(q-32)*q8 = sum sc*q*q8 - 32 * sum
//    sc*bsums, one vpmaddwd over the block's bsums (a Q8_K block's bsums are the sums of its qs).
// Only intrinsics and this file's own functions are used: an inline function from a shared header
// compiled here with AVX2 could be picked by the linker for the portable callers too.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "quant/codecs/k_quants.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::quant {

namespace {

// Byte shuffles that broadcast one int16 scale per 128-bit lane.
struct ShuffleMasks {
    alignas(32) uint8_t sub32[8][32];  // [s]: element s in both lanes (Q4_K/Q5_K: a 32-weight
                                       // sub-block fills the whole vector)
    alignas(32) uint8_t sub16[4][32];  // [k]: element 2k in the low lane, 2k+1 in the high lane
                                       // (Q2_K, Q3_K, Q6_K: 32 weights are two 16-weight
                                       // sub-blocks)
};
constexpr ShuffleMasks make_shuffle_masks() {
    ShuffleMasks m{};
    for (int s = 0; s < 8; ++s)
        for (int b = 0; b < 32; b += 2) m.sub32[s][b] = uint8_t(2 * s), m.sub32[s][b + 1] = uint8_t(2 * s + 1);
    for (int k = 0; k < 4; ++k)
        for (int b = 0; b < 16; b += 2) {
            m.sub16[k][b] = uint8_t(4 * k), m.sub16[k][b + 1] = uint8_t(4 * k + 1);
            m.sub16[k][16 + b] = uint8_t(4 * k + 2), m.sub16[k][17 + b] = uint8_t(4 * k + 3);
        }
    return m;
}
constexpr ShuffleMasks kShuffles = make_shuffle_masks();

// binary16 to float via a plain move and vcvtph2ps (_cvtsh_ss inserts through the shuffle
// port, which the scale shuffles keep busy).
[[gnu::always_inline]] inline float f16_value(uint16_t h) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h))); }

// A block's binary16 d and dmin (adjacent fields) times the Q8_K scale, in lanes 0 and 1: the
// products d_q8 * d and d_q8 * dmin that ggml forms, with one conversion.
template <typename Block>
[[gnu::always_inline]] inline __m128 d_dmin_times(const Block& b, float scale) {
    static_assert(offsetof(Block, dmin) == offsetof(Block, d) + 2, "d and dmin are adjacent");
    uint32_t bits;
    std::memcpy(&bits, reinterpret_cast<const uint8_t*>(&b) + offsetof(Block, d), 4);
    return _mm_mul_ps(_mm_set1_ps(scale), _mm_cvtph_ps(_mm_cvtsi32_si128(int(bits))));
}

[[gnu::always_inline]] inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
[[gnu::always_inline]] inline __m256i shuffle_of(const uint8_t* mask) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(mask));
}

// Eight 6-bit scales (elements 0..7) and eight mins (8..15) of a Q4_K/Q5_K block as bytes, the
// k_scale_min layout unpacked four sub-blocks at a time.
[[gnu::always_inline]] inline __m128i k4_scales_mins(const uint8_t* packed) {
    uint32_t a, b, c;
    std::memcpy(&a, packed, 4);
    std::memcpy(&b, packed + 4, 4);
    std::memcpy(&c, packed + 8, 4);
    const uint32_t sc_lo = a & 0x3f3f3f3fu, m_lo = b & 0x3f3f3f3fu;
    const uint32_t sc_hi = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
    const uint32_t m_hi = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
    return _mm_setr_epi32(int(sc_lo), int(sc_hi), int(m_lo), int(m_hi));
}

// summs lanes: mins[s] * (bsums[2s] + bsums[2s+1]) as four int32 (pairs of sub-blocks).
[[gnu::always_inline]] inline __m128i k4_min_products(__m128i scales_mins, const int16_t* bsums) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums + 8));
    const __m128i sub_sums = _mm_hadd_epi16(lo, hi);  // |sum of 32 int8| <= 4096: no overflow
    return _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(scales_mins, 8)), sub_sums);
}

[[gnu::always_inline]] inline int32_t hsum_epi32(__m128i v) {
    v = _mm_add_epi32(v, _mm_unpackhi_epi64(v, v));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x55));
    return _mm_cvtsi128_si32(v);
}

[[gnu::always_inline]] inline float hsum8(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

[[gnu::always_inline]] inline float hsum4(__m128 h) {
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

// Q4_K and Q5_K share everything but the fifth bit; Bits5 selects it.
template <bool Bits5, typename Block>
[[gnu::always_inline]] inline float dot_q45(int64_t n, const Block* wb, const block_q8_K* xb) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();  // Q4_K: four lanes of mins
    float sum_m = 0.0f;               // Q5_K: one
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const Block& b = wb[i];
        const block_q8_K& y = xb[i];
        const __m128i scales_mins = k4_scales_mins(b.scales);
        const __m128 d_dmin = d_dmin_times(b, y.d);
        const float dmin = -_mm_cvtss_f32(_mm_movehdup_ps(d_dmin));
        const __m128i min_products = k4_min_products(scales_mins, y.bsums);
        if constexpr (Bits5) {
            // ggml's Q5_K kernel sums the mins per block into one float (its results, bit for bit).
            sum_m = _mm_cvtss_f32(
                _mm_fmadd_ss(_mm_set_ss(dmin), _mm_set_ss(float(hsum_epi32(min_products))), _mm_set_ss(sum_m)));
        } else {
            acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(min_products), acc_m);
        }

        const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
        __m256i hbits;
        if constexpr (Bits5) hbits = load256(b.qh);
        __m256i sumi = _mm256_setzero_si256();
        #pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {  // weights 64k..64k+63: sub-blocks 2k (low nibbles), 2k+1 (high)
            const __m256i q = load256(b.qs + 32 * k);
            __m256i q_lo = _mm256_and_si256(q, low4);
            __m256i q_hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if constexpr (Bits5) {
                // bit 2k of qh[l] -> bit 4 of weight 64k+l, bit 2k+1 -> bit 4 of 64k+32+l
                // (16-bit shifts; the masks keep each byte's own bit).
                q_lo = _mm256_or_si256(q_lo, _mm256_and_si256(_mm256_slli_epi16(hbits, 4), bit4));
                q_hi = _mm256_or_si256(q_hi, _mm256_and_si256(_mm256_slli_epi16(hbits, 3), bit4));
                hbits = _mm256_srli_epi16(hbits, 2);
            }
            const __m256i p_lo = _mm256_maddubs_epi16(q_lo, load256(y.qs + 64 * k));
            const __m256i p_hi = _mm256_maddubs_epi16(q_hi, load256(y.qs + 64 * k + 32));
            const __m256i s_lo =
                _mm256_madd_epi16(p_lo, _mm256_shuffle_epi8(scales, shuffle_of(kShuffles.sub32[2 * k])));
            const __m256i s_hi =
                _mm256_madd_epi16(p_hi, _mm256_shuffle_epi8(scales, shuffle_of(kShuffles.sub32[2 * k + 1])));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(s_lo, s_hi));
        }
        acc = _mm256_fmadd_ps(_mm256_broadcastss_ps(d_dmin), _mm256_cvtepi32_ps(sumi), acc);
    }
    return Bits5 ? hsum8(acc) + sum_m : hsum8(acc) + hsum4(acc_m);
}

// Sixteen-weight sub-blocks (Q2_K, Q3_K, Q6_K): the int16 scales of sub-blocks 8h..8h+7 in both
// 128-bit lanes, from the 16 int16 scales of the block.
[[gnu::always_inline]] inline __m256i half_scales(__m256i scales16, int h) {
    return h == 0 ? _mm256_permute4x64_epi64(scales16, 0x44) : _mm256_permute4x64_epi64(scales16, 0xee);
}

// Q3_K: 4 where bit B of the hmask byte is clear (the code's -4), else 0. One bit per byte, so
// the 16-bit shifts cannot carry it into a neighbour.
template <int B>
[[gnu::always_inline]] inline __m256i q3_minus4(__m256i hbits) {
    const __m256i clear = _mm256_andnot_si256(hbits, _mm256_set1_epi8(char(1 << B)));
    if constexpr (B <= 2) return _mm256_slli_epi16(clear, 2 - B);
    return _mm256_srli_epi16(clear, B - 2);
}

// Weights 128h + 32j + l of a Q3_K block against their activations: codes q = low - minus4, as
// pair sums of maddubs(low, q8) - maddubs(minus4, q8) (both unsigned x signed), scaled per
// 16-weight sub-block.
template <int H, int J>
[[gnu::always_inline]] inline __m256i q3_group(__m256i q2bits, __m256i hbits, __m256i scales, const int8_t* q8) {
    const __m256i low = _mm256_and_si256(_mm256_srli_epi16(q2bits, 2 * J), _mm256_set1_epi8(3));
    const __m256i a = load256(q8 + 128 * H + 32 * J);
    const __m256i minus4 = q3_minus4<4 * H + J>(hbits);
    const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(low, a), _mm256_maddubs_epi16(minus4, a));
    return _mm256_madd_epi16(p, _mm256_shuffle_epi8(scales, shuffle_of(kShuffles.sub16[J])));
}

// The 128 weights of half H (sub-blocks 8H..8H+7).
template <int H>
[[gnu::always_inline]] inline __m256i q3_half(const block_q3_K& b, __m256i hbits, __m256i scales, const int8_t* q8) {
    const __m256i q = load256(b.qs + 32 * H);
    return _mm256_add_epi32(
        _mm256_add_epi32(q3_group<H, 0>(q, hbits, scales, q8), q3_group<H, 1>(q, hbits, scales, q8)),
        _mm256_add_epi32(q3_group<H, 2>(q, hbits, scales, q8), q3_group<H, 3>(q, hbits, scales, q8)));
}

}  // namespace

float vec_dot_q2_K_q8_K_avx2(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q2_K*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    const __m256i low2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const block_q2_K& b = wb[i];
        const block_q8_K& y = xb[i];
        const __m128 d_dmin = d_dmin_times(b, y.d);
        const float dmin = -_mm_cvtss_f32(_mm_movehdup_ps(d_dmin));
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
        const __m128i low4 = _mm_set1_epi8(0x0f);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4));
        // The mins first, into the same accumulator (ggml's order): m_s * bsums_s in pairs of s.
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_madd_epi16(mins, load256(y.bsums))), acc);
        const __m256i scales16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, low4));
        __m256i sumi = _mm256_setzero_si256();
        #pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i scales = half_scales(scales16, h);
            const __m256i q = load256(b.qs + 32 * h);
            #pragma GCC unroll 4
            for (int j = 0; j < 4; ++j) {
                // 16-bit shifts: each byte keeps its own two bits after the mask.
                const __m256i codes = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * j)), low2);
                const __m256i p = _mm256_maddubs_epi16(codes, load256(y.qs + 128 * h + 32 * j));
                sumi = _mm256_add_epi32(
                    sumi, _mm256_madd_epi16(p, _mm256_shuffle_epi8(scales, shuffle_of(kShuffles.sub16[j]))));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_broadcastss_ps(d_dmin), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum8(acc);
}

float vec_dot_q3_K_q8_K_avx2(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q3_K*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const block_q3_K& b = wb[i];
        const block_q8_K& y = xb[i];
        // The sixteen 6-bit scale codes (q3_K_scale's layout) four at a time, minus 32.
        uint32_t a0, a1, a2;
        std::memcpy(&a0, b.scales, 4);
        std::memcpy(&a1, b.scales + 4, 4);
        std::memcpy(&a2, b.scales + 8, 4);
        const uint32_t low = 0x0f0f0f0fu, top = 0x03030303u;
        const __m128i codes = _mm_setr_epi32(
            int((a0 & low) | (a2 & top) << 4), int((a1 & low) | ((a2 >> 2) & top) << 4),
            int(((a0 >> 4) & low) | ((a2 >> 4) & top) << 4), int(((a1 >> 4) & low) | ((a2 >> 6) & top) << 4));
        const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_sub_epi8(codes, _mm_set1_epi8(32)));
        const __m256i hbits = load256(b.hmask);
        const __m256i sumi = _mm256_add_epi32(q3_half<0>(b, hbits, half_scales(scales16, 0), y.qs),
                                              q3_half<1>(b, hbits, half_scales(scales16, 1), y.qs));
        const float d = y.d * f16_value(b.d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum8(acc);
}

float vec_dot_q4_K_q8_K_avx2(int64_t n, const void* w, const void* x) {
    return dot_q45<false>(n, static_cast<const block_q4_K*>(w), static_cast<const block_q8_K*>(x));
}

float vec_dot_q5_K_q8_K_avx2(int64_t n, const void* w, const void* x) {
    return dot_q45<true>(n, static_cast<const block_q5_K*>(w), static_cast<const block_q8_K*>(x));
}

float vec_dot_q6_K_q8_K_avx2(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q6_K*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i bits45 = _mm256_set1_epi8(0x30);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const block_q6_K& b = wb[i];
        const block_q8_K& y = xb[i];
        const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
        // The offset: 32 * sum_s sc_s * bsums_s, as eight int32 lanes.
        const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(scales16, load256(y.bsums)), 5);
        __m256i sumi = _mm256_setzero_si256();
        #pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {  // weights 128h..128h+127, sub-blocks 8h..8h+7
            const __m256i scales = half_scales(scales16, h);
            const __m256i ql0 = load256(b.ql + 64 * h), ql1 = load256(b.ql + 64 * h + 32);
            const __m256i qh = load256(b.qh + 32 * h);
            // Codes of weights 128h + 32k + l (k = 0..3): a nibble of ql and two bits of qh at bits 4-5.
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45)),
                _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, bits45)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45)),
            };
            #pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                const __m256i p = _mm256_maddubs_epi16(q[k], load256(y.qs + 128 * h + 32 * k));
                const __m256i sc = _mm256_shuffle_epi8(scales, shuffle_of(kShuffles.sub16[k]));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sc));
            }
        }
        const float d = y.d * f16_value(b.d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi, offset)), acc);
    }
    return hsum8(acc);
}

}  // namespace strata::quant

#endif  // __x86_64__
