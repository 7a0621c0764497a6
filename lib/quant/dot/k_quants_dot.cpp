// Portable K-quant x Q8_K dots: ggml's ggml_vec_dot_<type>_q8_K_generic, whose float order
// (including GCC's contractions in ggml's x86 build, made explicit here with std::fma) they
// reproduce, so these are the reference the SIMD kernels are tested against.
#include <cmath>

#include "quant/codecs/k_quants.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::quant {

namespace {

// ggml's eight int32 lanes of one block: lane l accumulates scale(p) * code(p) * q8[p] over the
// positions p = l mod 8, where scale(p) is the scale of p's sub-block.
struct Lanes {
    int32_t v[8];
};

// codes[p] and sub-block scales (one per `sub` weights) to lanes. |code * q8| <= 32 * 128, and
// the 2 or 4 products of a lane within a sub-block stay below 2^15: int16 until the scale, so
// that the compiler's 128-bit vectors hold eight of them.
template <int sub>
Lanes lanes_of(const int8_t* codes, const int16_t* scales, const int8_t* q8) {
    int16_t prod[kQK_K];
    for (int p = 0; p < kQK_K; ++p) prod[p] = int16_t(codes[p] * q8[p]);
    Lanes r{};
    for (int s = 0; s < kQK_K / sub; ++s) {
        const int16_t* ps = prod + sub * s;
        int16_t part[8];
        for (int l = 0; l < 8; ++l) part[l] = ps[l];
        for (int g = 8; g < sub; g += 8)
            for (int l = 0; l < 8; ++l) part[l] = int16_t(part[l] + ps[g + l]);
        for (int l = 0; l < 8; ++l) r.v[l] += int32_t(scales[s]) * int32_t(part[l]);
    }
    return r;
}

// The 256 codes of a block (the integers q of k_quants.hpp), unpacked a whole byte array at a
// time (the per-weight accessors of k_quants.hpp are the specification; these loops vectorize).
void codes_of(const block_q2_K& b, int8_t* a) {
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) a[128 * h + 32 * j + l] = int8_t((b.qs[32 * h + l] >> (2 * j)) & 3);
}
void codes_of(const block_q3_K& b, int8_t* a) {
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) {
                const int low = (b.qs[32 * h + l] >> (2 * j)) & 3;
                const int high_clear = ((b.hmask[l] >> (4 * h + j)) & 1) ^ 1;
                a[128 * h + 32 * j + l] = int8_t(low - 4 * high_clear);
            }
}
void codes_of(const block_q4_K& b, int8_t* a) {
    for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l) {
            a[64 * k + l] = int8_t(b.qs[32 * k + l] & 0x0f);
            a[64 * k + 32 + l] = int8_t(b.qs[32 * k + l] >> 4);
        }
}
void codes_of(const block_q5_K& b, int8_t* a) {
    for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l) {
            a[64 * k + l] = int8_t((b.qs[32 * k + l] & 0x0f) | ((b.qh[l] >> (2 * k)) & 1) << 4);
            a[64 * k + 32 + l] = int8_t((b.qs[32 * k + l] >> 4) | ((b.qh[l] >> (2 * k + 1)) & 1) << 4);
        }
}
void codes_of(const block_q6_K& b, int8_t* a) {
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
            const uint8_t* ql = b.ql + 64 * h;
            const uint8_t qh = b.qh[32 * h + l];
            int8_t* y = a + 128 * h;
            y[l] = int8_t(((ql[l] & 0x0f) | (qh & 3) << 4) - 32);
            y[l + 32] = int8_t(((ql[l + 32] & 0x0f) | ((qh >> 2) & 3) << 4) - 32);
            y[l + 64] = int8_t(((ql[l] >> 4) | ((qh >> 4) & 3) << 4) - 32);
            y[l + 96] = int8_t(((ql[l + 32] >> 4) | ((qh >> 6) & 3) << 4) - 32);
        }
}

// Q4_K/Q5_K: the eight 6-bit scales and the min sum against bsums.
int32_t k4_scales_and_mins(const uint8_t* packed, const int16_t* bsums, int16_t scales[8]) {
    int32_t summs = 0;
    for (int s = 0; s < 8; ++s) {
        const KScaleMin sm = k_scale_min(packed, s);
        scales[s] = sm.scale;
        summs += int32_t(sm.min) * (int32_t(bsums[2 * s]) + int32_t(bsums[2 * s + 1]));
    }
    return summs;
}

// After the block loop: sum += lane accumulators 0..7 in order, as ggml does.
float add_lanes(float sum, const float* acc) {
    for (int l = 0; l < 8; ++l) sum += acc[l];
    return sum;
}

// Q3_K/Q6_K: the sixteen signed sub-block scales.
void sub_scales(const block_q3_K& b, int16_t scales[16]) {
    for (int s = 0; s < 16; ++s) scales[s] = int16_t(q3_K_scale(b.scales, s));
}
void sub_scales(const block_q6_K& b, int16_t scales[16]) {
    for (int s = 0; s < 16; ++s) scales[s] = b.scales[s];
}

// Q3_K and Q6_K (no mins): eight lane accumulators += d * lane, unfused.
template <class Block>
float dot_no_min(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const Block*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float acc[8] = {};
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        int8_t codes[kQK_K];
        int16_t scales[16];
        codes_of(wb[i], codes);
        sub_scales(wb[i], scales);
        const Lanes lanes = lanes_of<16>(codes, scales, xb[i].qs);
        const float d = f16_to_f32(wb[i].d) * xb[i].d;
        for (int l = 0; l < 8; ++l) acc[l] += d * float(lanes.v[l]);
    }
    return add_lanes(0.0f, acc);
}

// Q4_K and Q5_K (6-bit scales and mins): lanes += fma, sum = fma(-dmin, summs, sum).
template <class Block>
float dot_scale_min(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const Block*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float acc[8] = {};
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        int8_t codes[kQK_K];
        int16_t scales[8];
        codes_of(wb[i], codes);
        const int32_t summs = k4_scales_and_mins(wb[i].scales, xb[i].bsums, scales);
        const Lanes lanes = lanes_of<32>(codes, scales, xb[i].qs);
        const float d = f16_to_f32(wb[i].d) * xb[i].d;
        for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, float(lanes.v[l]), acc[l]);
        const float dmin = f16_to_f32(wb[i].dmin) * xb[i].d;
        sum = std::fma(-dmin, float(summs), sum);
    }
    return add_lanes(sum, acc);
}

}  // namespace

float vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q2_K*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        int8_t codes[kQK_K];
        int16_t scales[16];
        int32_t summs = 0;
        codes_of(wb[i], codes);
        for (int s = 0; s < 16; ++s) {
            scales[s] = int16_t(wb[i].scales[s] & 0x0f);
            summs += int32_t(wb[i].scales[s] >> 4) * xb[i].bsums[s];
        }
        const Lanes lanes = lanes_of<16>(codes, scales, xb[i].qs);
        int32_t sumi = 0;
        for (int l = 0; l < 8; ++l) sumi += lanes.v[l];
        const float dall = xb[i].d * f16_to_f32(wb[i].d);
        const float dmin = xb[i].d * f16_to_f32(wb[i].dmin);
        // ggml: sumf += dall * isum - dmin * summs, the first product fused.
        sum += std::fma(dall, float(sumi), -(dmin * float(summs)));
    }
    return sum;
}

float vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* x) {
    return dot_no_min<block_q3_K>(n, w, x);
}

float vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* x) {
    return dot_scale_min<block_q4_K>(n, w, x);
}

float vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* x) {
    return dot_scale_min<block_q5_K>(n, w, x);
}

float vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* x) {
    return dot_no_min<block_q6_K>(n, w, x);
}

}  // namespace strata::quant
