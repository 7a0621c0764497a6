// AVX2 IQ4_XS x Q8_K and IQ4_NL x Q8_0 kernels (this file alone is compiled with -mavx2 -mfma
// -mf16c).
//
// Technique: the 4-bit codes index the 16-byte codebook with vpshufb; each product pair comes from
// vpmaddubsw(|q8|, value carrying q8's sign). |q8| is unsigned, so -128 is exact (ggml's kernels
// take the sign from the weights and lose q8 = -128, which its quantizers never produce; strata's
// kernels are exact for every int8), and |pair| <= 2*128*127 < 2^15 never saturates.
//  - IQ4_XS: two sub-blocks (64 weights) per step: one 32-byte load of their packed codes gives
//    the low nibbles of both in one register and the high nibbles in another; the activations are
//    loaded as matching 16-byte halves, so no cross-lane shuffle is needed, and vpmaddwd with
//    (ls_s in the low lane, ls_s+1 in the high lane) widens to int32. The superblock's integers
//    (each lane below 2^24, exact in float32) are scaled once by d_iq4 * d_q8, as ggml does.
//  - IQ4_NL: one block per step, int32 lanes scaled by d_iq4 * d_q8, four float accumulators.
// Only intrinsics and this file's own functions are used: an inline function from a shared
// header compiled with AVX2 could be picked by the linker for the portable callers too.
#if defined(__x86_64__)

#include <immintrin.h>

#include "quant/iq/iq4_xs.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::quant {

namespace {

[[gnu::always_inline]] inline __m256i codebook() {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
}

// Pairs value[2i]*q8[2i] + value[2i+1]*q8[2i+1] as int16, exact for every int8 q8.
[[gnu::always_inline]] inline __m256i mul_pairs(__m256i values, __m256i q8) {
    return _mm256_maddubs_epi16(_mm256_abs_epi8(q8), _mm256_sign_epi8(values, q8));
}

[[gnu::always_inline]] inline __m256i load_halves(const int8_t* lo, const int8_t* hi) {
    return _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(hi), reinterpret_cast<const __m128i*>(lo));
}

[[gnu::always_inline]] inline float hsum(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

// The eight signed sub-block scales code6 - 32 as (ls, ls) int16 pairs in int32 lanes.
[[gnu::always_inline]] inline __m256i xs_scale_pairs(const block_iq4_xs& x) {
    uint32_t lo4;
    __builtin_memcpy(&lo4, x.scales_l, sizeof lo4);
    // Nibble s of scales_l (even s: low nibbles) and bits 2s..2s+1 of scales_h, per int32 lane s.
    const __m256i lanes = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(lo4)), lanes), _mm256_set1_epi32(0x0f));
    const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(x.scales_h), _mm256_srli_epi32(lanes, 1)),
                                        _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
    return _mm256_or_si256(_mm256_and_si256(ls, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(ls, 16));
}

// sum_s (code6_s - 32) * sumi_s of one superblock, spread over eight int32 lanes.
[[gnu::always_inline]] inline __m256i xs_block_lanes(const block_iq4_xs& x, const block_q8_K& y) {
    const __m256i values = codebook();
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i pairs = xs_scale_pairs(x);
    __m256i acc = _mm256_setzero_si256();
    #pragma GCC unroll 4
    for (int s = 0; s < 8; s += 2) {
        const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 16 * s));
        const __m256i v_lo = _mm256_shuffle_epi8(values, _mm256_and_si256(codes, m4));  // weights 0..15 of s | s+1
        const __m256i v_hi = _mm256_shuffle_epi8(values, _mm256_and_si256(_mm256_srli_epi16(codes, 4), m4));  // 16..31
        const int8_t* q8 = y.qs + 32 * s;
        const __m256i p_lo = mul_pairs(v_lo, load_halves(q8, q8 + 32));
        const __m256i p_hi = mul_pairs(v_hi, load_halves(q8 + 16, q8 + 48));
        const __m256i sc = _mm256_permutevar8x32_epi32(pairs, _mm256_setr_epi32(s, s, s, s, s + 1, s + 1, s + 1, s + 1));
        acc = _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(p_lo, sc), _mm256_madd_epi16(p_hi, sc)));
    }
    return acc;
}

// value * q8 summed per block of 32, in eight int32 lanes.
[[gnu::always_inline]] inline __m256i nl_block_lanes(const block_iq4_nl& x, const block_q8_0& y, __m256i values) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs));
    const __m256i codes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
    const __m256i q8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs));
    return _mm256_madd_epi16(mul_pairs(_mm256_shuffle_epi8(values, codes), q8), _mm256_set1_epi16(1));
}

[[gnu::always_inline]] inline __m256 nl_scale(const block_iq4_nl& x, const block_q8_0& y) {
    return _mm256_set1_ps(_cvtsh_ss(y.d) * _cvtsh_ss(x.d));
}

}  // namespace

float vec_dot_iq4_xs_q8_K_avx2(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_iq4_xs*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const __m256i lanes = xs_block_lanes(wb[b], xb[b]);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(wb[b].d) * xb[b].d), _mm256_cvtepi32_ps(lanes), acc);
    }
    return hsum(acc);
}

float vec_dot_iq4_nl_q8_0_avx2(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_iq4_nl*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    const __m256i values = codebook();
    const int64_t nb = n / kQK4_NL;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        #pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
            acc[k] = _mm256_fmadd_ps(nl_scale(wb[b + k], xb[b + k]),
                                     _mm256_cvtepi32_ps(nl_block_lanes(wb[b + k], xb[b + k], values)), acc[k]);
    }
    for (; b < nb; ++b)
        acc[0] = _mm256_fmadd_ps(nl_scale(wb[b], xb[b]), _mm256_cvtepi32_ps(nl_block_lanes(wb[b], xb[b], values)), acc[0]);
    return hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

}  // namespace strata::quant

#endif  // __x86_64__
