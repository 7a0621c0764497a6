// AVX2 dots of the 32-weight formats against Q8_0 / Q8_1 activations: Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1 and MXFP4 (this file alone is compiled with -mavx2 -mfma -mf16c; called only after
// run-time detection).
//
// Per block of 32, the integer sum is formed exactly as the scalar kernel's:
//  - Q8_0 x Q8_0: vpmaddubsw needs one unsigned operand, so |w| (vpsignb w,w: -128 becomes the
//    unsigned 128, exact) multiplies x * sign(w) (exact while x != -128: quantize_row_q8_0 never
//    writes -128). Pairs stay within 2 * 128 * 127 < 2^15: no saturation.
//  - Q4_0 / Q5_0: the codes q (0..15 / 0..31) are the unsigned operand directly; sum (q - o) x
//    is formed as pairs of q*x minus pairs of o*x (o = 8 / 16; each pair within +-7936), exact
//    for every activation byte. Q4_1 / Q5_1: pairs of q*x alone; the min enters through s.
//  - MXFP4: vpshufb looks the codes up in the codebook plus 12 (0..24, unsigned), and 12*x pairs
//    come off again (pairs within +-6144): exact for every activation byte.
// vpmaddwd by ones widens the pairs to eight int32 lanes, which are scaled (d_w * d_x, one float
// product as in the scalar kernel) and accumulated with FMA in eight float lanes; two
// accumulators over alternate blocks hide the FMA latency. The scales of four blocks are
// converted together (one vcvtph2ps per operand, then one permute per block instead of a
// scalar conversion pair and a broadcast: about 20% faster per row). The float result differs
// from the scalar kernel's only by rounding order.
// Only intrinsics and this file's own functions are used: an inline function of a shared header
// compiled here with AVX2 could be the copy the linker keeps for portable callers too.
#if defined(__x86_64__)

#include <immintrin.h>

#include <array>
#include <cstring>

#include "quant/codecs/legacy_quants.hpp"
#include "quant/codecs/mxfp4.hpp"
#include "quant/codecs/q8_0.hpp"

namespace strata::quant {

namespace {

[[gnu::always_inline]] inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

[[gnu::always_inline]] inline __m256i load32(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// The 32 four-bit codes of a Q4 block in weight order (bytes 0..15: low nibbles, 16..31: high):
// the 16 bytes loaded into both halves, the upper half shifted by 4 (vpsrlvq), then masked.
[[gnu::always_inline]] inline __m256i q4_codes(const uint8_t* qs) {
    const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    return _mm256_and_si256(_mm256_srlv_epi64(raw, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0f));
}

[[gnu::always_inline]] inline __m256i widen_pairs(__m256i pairs) { return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)); }

// Eight int32 lanes summing to sum_j w_j * x_j (x_j != -128).
[[gnu::always_inline]] inline __m256i q8_lanes(const int8_t* w, const int8_t* x) {
    const __m256i wv = load32(w);
    const __m256i xv = load32(x);
    return widen_pairs(_mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv)));
}

// Eight int32 lanes summing to sum_j (q_j - 8) * x_j.
[[gnu::always_inline]] inline __m256i q4_0_lanes(const uint8_t* qs, const int8_t* x) {
    const __m256i xv = load32(x);
    const __m256i pairs =
        _mm256_sub_epi16(_mm256_maddubs_epi16(q4_codes(qs), xv), _mm256_maddubs_epi16(_mm256_set1_epi8(8), xv));
    return widen_pairs(pairs);
}

// Eight int32 lanes summing to sum_j q_j * x_j.
[[gnu::always_inline]] inline __m256i q4_1_lanes(const uint8_t* qs, const int8_t* x) {
    return widen_pairs(_mm256_maddubs_epi16(q4_codes(qs), load32(x)));
}

// The 32 five-bit codes of a Q5 block: the Q4 nibbles with 16 added where bit j of qh is set
// (qh's four bytes spread over the 32 lanes, each lane testing its own bit).
[[gnu::always_inline]] inline __m256i q5_codes(const uint8_t* qs, const uint8_t* qh) {
    uint32_t high;
    std::memcpy(&high, qh, sizeof high);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(int(high)),
                                               _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                                                2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201ll);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_or_si256(q4_codes(qs), _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
}

// Eight int32 lanes summing to sum_j (q_j - 16) * x_j, and to sum_j q_j * x_j.
[[gnu::always_inline]] inline __m256i q5_0_lanes(const block_q5_0& w, const int8_t* x) {
    const __m256i xv = load32(x);
    return widen_pairs(_mm256_sub_epi16(_mm256_maddubs_epi16(q5_codes(w.qs, w.qh), xv),
                                        _mm256_maddubs_epi16(_mm256_set1_epi8(16), xv)));
}

[[gnu::always_inline]] inline __m256i q5_1_lanes(const block_q5_1& w, const int8_t* x) {
    return widen_pairs(_mm256_maddubs_epi16(q5_codes(w.qs, w.qh), load32(x)));
}

// kMxfp4Values + 12 (0..24) in both 16-byte halves, for vpshufb.
constexpr int kMxfp4Bias = 12;
constexpr std::array<uint8_t, 32> make_mxfp4_biased() {
    std::array<uint8_t, 32> t{};
    for (int i = 0; i < 32; ++i) t[size_t(i)] = uint8_t(kMxfp4Values[i % 16] + kMxfp4Bias);
    return t;
}
alignas(32) constexpr std::array<uint8_t, 32> kMxfp4Biased = make_mxfp4_biased();

// Eight int32 lanes summing to sum_j value(code_j) * x_j.
[[gnu::always_inline]] inline __m256i mxfp4_lanes(const block_mxfp4& w, const int8_t* x) {
    const __m256i xv = load32(x);
    const __m256i table = _mm256_load_si256(reinterpret_cast<const __m256i*>(kMxfp4Biased.data()));
    const __m256i biased = _mm256_shuffle_epi8(table, q4_codes(w.qs));
    return widen_pairs(_mm256_sub_epi16(_mm256_maddubs_epi16(biased, xv), _mm256_maddubs_epi16(_mm256_set1_epi8(kMxfp4Bias), xv)));
}

// ggml_e8m0_to_fp32_half of four exponents: 2^(e - 128) as float bits, the subnormals for e < 2.
[[gnu::always_inline]] inline __m128 mxfp4_half_scales(const block_mxfp4* w) {
    const __m128i e = _mm_setr_epi32(w[0].e, w[1].e, w[2].e, w[3].e);
    const __m128i normal = _mm_slli_epi32(_mm_sub_epi32(e, _mm_set1_epi32(1)), 23);
    const __m128i subnormal = _mm_sllv_epi32(_mm_set1_epi32(0x00200000), e);
    return _mm_castsi128_ps(_mm_blendv_epi8(normal, subnormal, _mm_cmplt_epi32(e, _mm_set1_epi32(2))));
}

[[gnu::always_inline]] inline float mxfp4_half_scale1(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

[[gnu::always_inline]] inline __m128 halves4(const block_q8_0* x) {
    const uint64_t h = uint64_t(x[0].d) | uint64_t(x[1].d) << 16 | uint64_t(x[2].d) << 32 | uint64_t(x[3].d) << 48;
    return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(h)));
}

// d_w * d_x of blocks b .. b+3 (each one float product of the two binary16 scales, as in the
// scalar kernel) and, for the Q4_1 mins, m_w * s_x.
template <typename W, typename X>
[[gnu::always_inline]] inline __m128 product4(const W* w, const X* x, uint16_t W::*wf, uint16_t X::*xf) {
    const uint64_t wh = uint64_t(w[0].*wf) | uint64_t(w[1].*wf) << 16 | uint64_t(w[2].*wf) << 32 | uint64_t(w[3].*wf) << 48;
    const uint64_t xh = uint64_t(x[0].*xf) | uint64_t(x[1].*xf) << 16 | uint64_t(x[2].*xf) << 32 | uint64_t(x[3].*xf) << 48;
    return _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(wh))),
                      _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(xh))));
}

// acc + s[k] * float(lanes), s[k] broadcast by one vpermps.
[[gnu::always_inline]] inline __m256 scaled_add(__m256i lanes, __m128 s, int k, __m256 acc) {
    const __m256 d = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(s), _mm256_set1_epi32(k));
    return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc);
}

[[gnu::always_inline]] inline __m256 scaled_add(__m256i lanes, float d, __m256 acc) {
    return _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc);
}

[[gnu::always_inline]] inline float hsum(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

[[gnu::always_inline]] inline float hsum(__m128 h) {
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

// The dot over nb blocks: lanes(b) gives block b's eight int32 lanes, scales4(b) the float scale
// products of blocks b..b+3, scale1(b) that of block b alone. Blocks in fours (scales converted
// together, alternate accumulators), then the tail one by one.
template <typename Lanes, typename Scales4, typename Scale1>
[[gnu::always_inline]] inline float dot_blocks(int64_t nb, Lanes lanes, Scales4 scales4, Scale1 scale1) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        const __m128 s = scales4(b);
        acc0 = scaled_add(lanes(b), s, 0, acc0);
        acc1 = scaled_add(lanes(b + 1), s, 1, acc1);
        acc0 = scaled_add(lanes(b + 2), s, 2, acc0);
        acc1 = scaled_add(lanes(b + 3), s, 3, acc1);
    }
    for (; b < nb; ++b) acc0 = scaled_add(lanes(b), scale1(b), acc0);
    return hsum(_mm256_add_ps(acc0, acc1));
}

// dot_blocks for the types whose scale is a binary16 d on both sides.
template <typename W, typename X, typename Lanes>
[[gnu::always_inline]] inline float dot_rows(int64_t nb, const W* wb, const X* xb, Lanes lanes) {
    return dot_blocks(
        nb, [&](int64_t b) { return lanes(wb[b], xb[b]); },
        [&](int64_t b) { return product4(wb + b, xb + b, &W::d, &X::d); },
        [&](int64_t b) { return half_to_float(wb[b].d) * half_to_float(xb[b].d); });
}

// The min terms of Q4_1 / Q5_1 rows: sum of m_w * s_x, four blocks at a time.
template <typename W>
[[gnu::always_inline]] inline float min_terms(int64_t nb, const W* wb, const block_q8_1* xb) {
    __m128 mins4 = _mm_setzero_ps();
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4) mins4 = _mm_add_ps(mins4, product4(wb + b, xb + b, &W::m, &block_q8_1::s));
    float mins = hsum(mins4);
    for (; b < nb; ++b) mins += half_to_float(wb[b].m) * half_to_float(xb[b].s);
    return mins;
}

}  // namespace

float vec_dot_q8_0_q8_0_avx2(int64_t n, const void* w, const void* x) {
    return dot_rows(n / kQK8_0, static_cast<const block_q8_0*>(w), static_cast<const block_q8_0*>(x),
                    [](const block_q8_0& wb, const block_q8_0& xb) { return q8_lanes(wb.qs, xb.qs); });
}

float vec_dot_q4_0_q8_0_avx2(int64_t n, const void* w, const void* x) {
    return dot_rows(n / kQK4_0, static_cast<const block_q4_0*>(w), static_cast<const block_q8_0*>(x),
                    [](const block_q4_0& wb, const block_q8_0& xb) { return q4_0_lanes(wb.qs, xb.qs); });
}

float vec_dot_q4_1_q8_1_avx2(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q4_1*>(w);
    const auto* xb = static_cast<const block_q8_1*>(x);
    const int64_t nb = n / kQK4_1;
    const float sum = dot_rows(nb, wb, xb, [](const block_q4_1& wq, const block_q8_1& xq) { return q4_1_lanes(wq.qs, xq.qs); });
    return sum + min_terms(nb, wb, xb);
}

float vec_dot_q5_0_q8_0_avx2(int64_t n, const void* w, const void* x) {
    return dot_rows(n / kQK5_0, static_cast<const block_q5_0*>(w), static_cast<const block_q8_0*>(x),
                    [](const block_q5_0& wb, const block_q8_0& xb) { return q5_0_lanes(wb, xb.qs); });
}

float vec_dot_q5_1_q8_1_avx2(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q5_1*>(w);
    const auto* xb = static_cast<const block_q8_1*>(x);
    const int64_t nb = n / kQK5_1;
    const float sum = dot_rows(nb, wb, xb, [](const block_q5_1& wq, const block_q8_1& xq) { return q5_1_lanes(wq, xq.qs); });
    return sum + min_terms(nb, wb, xb);
}

float vec_dot_mxfp4_q8_0_avx2(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_mxfp4*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    return dot_blocks(
        n / kQK_MXFP4, [&](int64_t b) { return mxfp4_lanes(wb[b], xb[b].qs); },
        [&](int64_t b) { return _mm_mul_ps(halves4(xb + b), mxfp4_half_scales(wb + b)); },
        [&](int64_t b) { return half_to_float(xb[b].d) * mxfp4_half_scale1(wb[b].e); });
}

}  // namespace strata::quant

#endif  // __x86_64__
