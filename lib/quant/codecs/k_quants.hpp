// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K: ggml's "k-quant" superblocks of 256 weights, bit-compatible with
// ggml (block_q2_K .. block_q6_K). The layout of each block and the decode of one block live here
// as STRATA_HD functions, shared by the CPU rows and dots and the CUDA kernels.
//
// Weight w of a block (0..255); h = w / 128, j = (w / 32) % 4, l = w % 32 where a layout is
// described by (h, j, l).
//
// Q2_K (84 bytes): 16 sub-blocks of 16 weights, a 2-bit code q per weight.
//   scales[16]  sub-block s = w / 16: low nibble = scale sc, high nibble = min m
//   qs[64]      q = bits 2j..2j+1 of qs[32h + l]
//   d, dmin     binary16
//   weight = (d * sc) * q - (dmin * m)
// Q3_K (110 bytes): 16 sub-blocks of 16 weights, a signed 3-bit code q in -4..3.
//   hmask[32]   the high bit of w is bit 4h + j of hmask[l]
//   qs[64]      the low two bits of w are bits 2j..2j+1 of qs[32h + l]
//               q = low - 4 when the high bit is clear, = low when it is set
//   scales[12]  sixteen 6-bit scales (see q3_K_scale), biased by 32: sc in -32..31
//   d           binary16
//   weight = (d * sc) * q
// Q4_K (144 bytes) / Q5_K (176 bytes): 8 sub-blocks of 32 weights; sub-block s has a 6-bit
//   scale sc[s] and a 6-bit min m[s] packed in scales[12] (see k_scale_min), and
//     weight = (d * sc[s]) * q - (dmin * m[s])   (q: 4 bits, Q5_K adds a fifth bit from qh)
//   Q4_K qs[128]: weights 64k..64k+31 are the low nibbles of qs[32k..32k+31], weights
//                 64k+32..64k+63 the high nibbles (k = 0..3).
//   Q5_K qh[32]:  bit 2k of qh[l] is the fifth bit of weight 64k + l, bit 2k+1 that of
//                 weight 64k + 32 + l; qs as Q4_K.
// Q6_K (210 bytes): 16 sub-blocks of 16 weights with int8 scales, weight = (d * scales[s]) * (q - 32),
//   q: 6 bits (low 4 in ql, high 2 in qh). For each half h (128 weights) and l < 32:
//     weight 128h + l      : low nibble of ql[64h + l],       qh[32h + l] bits 0-1
//     weight 128h + 32 + l : low nibble of ql[64h + 32 + l],  qh[32h + l] bits 2-3
//     weight 128h + 64 + l : high nibble of ql[64h + l],      qh[32h + l] bits 4-5
//     weight 128h + 96 + l : high nibble of ql[64h + 32 + l], qh[32h + l] bits 6-7
//
// Every product and difference above is one float32 rounding, in the order written, as ggml's
// dequantize_row_* and the gguf package compute them (k_mul_sub keeps nvcc from fusing them).
#pragma once

#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"
#include "quant/iq/iq1s_block.hpp"  // kQK_K

namespace strata::quant {

inline constexpr int kKScaleBytes = 12;

struct block_q2_K {
    uint8_t scales[kQK_K / 16];  // low nibble: scale, high nibble: min, per 16 weights
    uint8_t qs[kQK_K / 4];
    uint16_t d;     // binary16 scale of the scales
    uint16_t dmin;  // binary16 scale of the mins
};
static_assert(sizeof(block_q2_K) == 84, "block_q2_K must be 84 bytes, as ggml writes it");

struct block_q3_K {
    uint8_t hmask[kQK_K / 8];
    uint8_t qs[kQK_K / 4];
    uint8_t scales[kKScaleBytes];
    uint16_t d;
};
static_assert(sizeof(block_q3_K) == 110, "block_q3_K must be 110 bytes, as ggml writes it");

struct block_q4_K {
    uint16_t d;     // binary16 scale of the scales
    uint16_t dmin;  // binary16 scale of the mins
    uint8_t scales[kKScaleBytes];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(block_q4_K) == 144, "block_q4_K must be 144 bytes, as ggml writes it");

struct block_q5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleBytes];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(block_q5_K) == 176, "block_q5_K must be 176 bytes, as ggml writes it");

struct block_q6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};
static_assert(sizeof(block_q6_K) == 210, "block_q6_K must be 210 bytes, as ggml writes it");

// a * b - c with two roundings, never fused (host code is built with -ffp-contract=off; nvcc
// would contract it).
STRATA_HD float k_mul_sub(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(__fmul_rn(a, b), c);
#else
    return a * b - c;
#endif
}

// The 6-bit scale and min of sub-block s (0..7) of a Q4_K/Q5_K block: for s < 4 the low six
// bits of scales[s] and scales[s + 4]; for s >= 4 the nibbles of scales[s + 4] (low: scale,
// high: min) with the top two bits of scales[s - 4] (scale) and scales[s] (min) above them.
struct KScaleMin {
    uint8_t scale, min;
};
STRATA_HD KScaleMin k_scale_min(const uint8_t* scales, int s) {
    if (s < 4) return {uint8_t(scales[s] & 63), uint8_t(scales[s + 4] & 63)};
    return {uint8_t((scales[s + 4] & 0x0f) | ((scales[s - 4] >> 6) << 4)),
            uint8_t((scales[s + 4] >> 4) | ((scales[s] >> 6) << 4))};
}

// The signed scale (-32..31) of sub-block s (0..15) of a Q3_K block: the low four bits are the
// low nibble of scales[s] (s < 8) or the high nibble of scales[s - 8]; bits 4-5 are bits
// 2(s/4)..2(s/4)+1 of scales[8 + s % 4]; the result is that 6-bit value minus 32.
STRATA_HD int q3_K_scale(const uint8_t* scales, int s) {
    const int low = s < 8 ? (scales[s] & 0x0f) : (scales[s - 8] >> 4);
    const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
    return (low | high << 4) - 32;
}

// The integer code of weight w (0..255), as the layouts above define it:
// Q2_K 0..3, Q3_K -4..3, Q4_K 0..15, Q5_K 0..31, Q6_K -32..31 (already minus 32).
STRATA_HD int q2_K_code(const block_q2_K& b, int w) {
    return (b.qs[32 * (w / 128) + w % 32] >> (2 * ((w / 32) % 4))) & 3;
}
STRATA_HD int q3_K_code(const block_q3_K& b, int w) {
    const int h = w / 128, j = (w / 32) % 4, l = w % 32;
    const int low = (b.qs[32 * h + l] >> (2 * j)) & 3;
    return ((b.hmask[l] >> (4 * h + j)) & 1) ? low : low - 4;
}
STRATA_HD int q4_K_code(const uint8_t* qs, int w) {
    const uint8_t byte = qs[32 * (w / 64) + w % 32];
    return (w % 64) < 32 ? (byte & 0x0f) : (byte >> 4);
}
STRATA_HD int q4_K_code(const block_q4_K& b, int w) { return q4_K_code(b.qs, w); }
STRATA_HD int q5_K_code(const block_q5_K& b, int w) {
    return q4_K_code(b.qs, w) | ((b.qh[w % 32] >> (w / 32)) & 1) << 4;
}
STRATA_HD int q6_K_code(const block_q6_K& b, int w) {
    const int h = w / 128, j = (w / 32) % 4, l = w % 32;
    const uint8_t low_byte = b.ql[64 * h + 32 * (j % 2) + l];
    const int low = j < 2 ? (low_byte & 0x0f) : (low_byte >> 4);
    const int high = (b.qh[32 * h + l] >> (2 * j)) & 3;
    return (low | high << 4) - 32;
}

// Decode one block to 256 floats, bit for bit as ggml's dequantize_row_*.
STRATA_HD void q2_K_decode_block(const block_q2_K& b, float* out) {
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    for (int s = 0; s < kQK_K / 16; ++s) {
        const float dl = d * float(b.scales[s] & 0x0f);
        const float ml = dmin * float(b.scales[s] >> 4);
        // Sub-block s: weights 16s..16s+15 share h = s / 8, j = (s / 2) % 4, l = 16(s % 2) + i.
        const uint8_t* q = b.qs + 32 * (s / 8) + 16 * (s % 2);
        const int shift = 2 * ((s / 2) % 4);
        for (int i = 0; i < 16; ++i) out[16 * s + i] = k_mul_sub(dl, float((q[i] >> shift) & 3), ml);
    }
}

STRATA_HD void q3_K_decode_block(const block_q3_K& b, float* out) {
    const float d = f16_to_f32(b.d);
    for (int s = 0; s < kQK_K / 16; ++s) {
        const float dl = d * float(q3_K_scale(b.scales, s));
        const int h = s / 8, j = (s / 2) % 4, l0 = 16 * (s % 2);
        for (int i = 0; i < 16; ++i) {
            const int l = l0 + i;
            const int low = (b.qs[32 * h + l] >> (2 * j)) & 3;
            const int q = ((b.hmask[l] >> (4 * h + j)) & 1) ? low : low - 4;
            out[16 * s + i] = dl * float(q);
        }
    }
}

STRATA_HD void q4_K_decode_block(const block_q4_K& b, float* out) {
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    for (int k = 0; k < 4; ++k) {  // 64 weights: sub-blocks 2k (low nibbles) and 2k+1 (high)
        const KScaleMin lo = k_scale_min(b.scales, 2 * k), hi = k_scale_min(b.scales, 2 * k + 1);
        const float mul_lo = d * float(lo.scale), sub_lo = dmin * float(lo.min);
        const float mul_hi = d * float(hi.scale), sub_hi = dmin * float(hi.min);
        const uint8_t* q = b.qs + 32 * k;
        for (int l = 0; l < 32; ++l) {
            out[64 * k + l] = k_mul_sub(mul_lo, float(q[l] & 0x0f), sub_lo);
            out[64 * k + 32 + l] = k_mul_sub(mul_hi, float(q[l] >> 4), sub_hi);
        }
    }
}

STRATA_HD void q5_K_decode_block(const block_q5_K& b, float* out) {
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    for (int k = 0; k < 4; ++k) {
        const KScaleMin lo = k_scale_min(b.scales, 2 * k), hi = k_scale_min(b.scales, 2 * k + 1);
        const float mul_lo = d * float(lo.scale), sub_lo = dmin * float(lo.min);
        const float mul_hi = d * float(hi.scale), sub_hi = dmin * float(hi.min);
        const uint8_t* q = b.qs + 32 * k;
        for (int l = 0; l < 32; ++l) {
            const int q_lo = (q[l] & 0x0f) | ((b.qh[l] >> (2 * k)) & 1) << 4;
            const int q_hi = (q[l] >> 4) | ((b.qh[l] >> (2 * k + 1)) & 1) << 4;
            out[64 * k + l] = k_mul_sub(mul_lo, float(q_lo), sub_lo);
            out[64 * k + 32 + l] = k_mul_sub(mul_hi, float(q_hi), sub_hi);
        }
    }
}

STRATA_HD void q6_K_decode_block(const block_q6_K& b, float* out) {
    const float d = f16_to_f32(b.d);
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = b.ql + 64 * h;
        const uint8_t* qh = b.qh + 32 * h;
        const int8_t* sc = b.scales + 8 * h;
        float* y = out + 128 * h;
        for (int l = 0; l < 32; ++l) {
            const int s = l / 16;  // the 16-weight sub-block within each 32-weight quarter
            const int q1 = ((ql[l] & 0x0f) | ((qh[l] & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = (d * float(sc[s])) * float(q1);
            y[l + 32] = (d * float(sc[s + 2])) * float(q2);
            y[l + 64] = (d * float(sc[s + 4])) * float(q3);
            y[l + 96] = (d * float(sc[s + 6])) * float(q4);
        }
    }
}

// The exact integers of one block's dot with 256 int8 activations q8 and their 16-sums bsums
// (a block_q8_K), as every K-quant x Q8_K kernel computes them:
//   sumi  = sum over sub-blocks s of sc_s * sum_{w in s} q_w * q8_w
//   summs = sum over sub-blocks s of m_s * sum_{w in s} q8_w   (0 for Q3_K and Q6_K)
// so that dot = d_w * d_q8 * sumi - dmin_w * d_q8 * summs. Every |sum| < 2^28: exact in int32.
struct KBlockSums {
    int32_t sumi;
    int32_t summs;
};

STRATA_HD KBlockSums q2_K_block_sums(const block_q2_K& b, const int8_t* q8, const int16_t* bsums) {
    KBlockSums r{0, 0};
    for (int s = 0; s < kQK_K / 16; ++s) {
        int32_t sub = 0;
        for (int i = 0; i < 16; ++i) sub += q2_K_code(b, 16 * s + i) * q8[16 * s + i];
        r.sumi += int32_t(b.scales[s] & 0x0f) * sub;
        r.summs += int32_t(b.scales[s] >> 4) * bsums[s];
    }
    return r;
}

STRATA_HD KBlockSums q3_K_block_sums(const block_q3_K& b, const int8_t* q8, const int16_t*) {
    KBlockSums r{0, 0};
    for (int s = 0; s < kQK_K / 16; ++s) {
        int32_t sub = 0;
        for (int i = 0; i < 16; ++i) sub += q3_K_code(b, 16 * s + i) * q8[16 * s + i];
        r.sumi += q3_K_scale(b.scales, s) * sub;
    }
    return r;
}

// Q4_K and Q5_K alike: eight 32-weight sub-blocks, each with a 6-bit scale and min (k_scale_min).
STRATA_HD int k45_code(const block_q4_K& b, int w) { return q4_K_code(b, w); }
STRATA_HD int k45_code(const block_q5_K& b, int w) { return q5_K_code(b, w); }
template <class Block>
STRATA_HD KBlockSums k45_block_sums(const Block& b, const int8_t* q8, const int16_t* bsums) {
    KBlockSums r{0, 0};
    for (int s = 0; s < kQK_K / 32; ++s) {
        int32_t sub = 0;
        for (int i = 0; i < 32; ++i) sub += k45_code(b, 32 * s + i) * q8[32 * s + i];
        const KScaleMin sm = k_scale_min(b.scales, s);
        r.sumi += int32_t(sm.scale) * sub;
        r.summs += int32_t(sm.min) * (int32_t(bsums[2 * s]) + int32_t(bsums[2 * s + 1]));
    }
    return r;
}

STRATA_HD KBlockSums q4_K_block_sums(const block_q4_K& b, const int8_t* q8, const int16_t* bsums) {
    return k45_block_sums(b, q8, bsums);
}

STRATA_HD KBlockSums q5_K_block_sums(const block_q5_K& b, const int8_t* q8, const int16_t* bsums) {
    return k45_block_sums(b, q8, bsums);
}

STRATA_HD KBlockSums q6_K_block_sums(const block_q6_K& b, const int8_t* q8, const int16_t*) {
    KBlockSums r{0, 0};
    for (int s = 0; s < kQK_K / 16; ++s) {
        int32_t sub = 0;
        for (int i = 0; i < 16; ++i) sub += q6_K_code(b, 16 * s + i) * q8[16 * s + i];
        r.sumi += int32_t(b.scales[s]) * sub;
    }
    return r;
}

// Rows of whole blocks: n must be a multiple of 256 (not checked).
void decode_row_q2_K(const void* blocks, float* y, int64_t n);
void decode_row_q3_K(const void* blocks, float* y, int64_t n);
void dequantize_row_q4_K(const block_q4_K* x, float* y, int64_t n);
void dequantize_row_q5_K(const block_q5_K* x, float* y, int64_t n);
void dequantize_row_q6_K(const block_q6_K* x, float* y, int64_t n);

// One weight row of n values (n/256 blocks) against n activations quantized to Q8_K (x: n/256
// block_q8_K from quant/codecs/q8_k.hpp); n a multiple of 256, unchecked (k_quants_dot.cpp).
// ggml_vec_dot_<type>_q8_K_generic's arithmetic and float order, including the multiply-adds
// that GCC contracts in ggml's x86 build (Q2_K: per block sum += fma(d, sumi, -(dmin * summs));
// Q4_K/Q5_K: eight lane accumulators += fma and sum = fma(-dmin, summs, sum); Q3_K/Q6_K: eight
// lane accumulators += d * lane, unfused), so that the results equal ggml's bit for bit.
float vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* x);
float vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* x);
float vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* x);
float vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* x);
float vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* x);

// The same integer sums per block (KBlockSums), another float rounding order: that of ggml's
// AVX2 kernels, whose results these equal bit for bit (k_quants_dot_avx2.cpp). AVX2+FMA+F16C
// CPUs only.
float vec_dot_q2_K_q8_K_avx2(int64_t n, const void* w, const void* x);
float vec_dot_q3_K_q8_K_avx2(int64_t n, const void* w, const void* x);
float vec_dot_q4_K_q8_K_avx2(int64_t n, const void* w, const void* x);
float vec_dot_q5_K_q8_K_avx2(int64_t n, const void* w, const void* x);
float vec_dot_q6_K_q8_K_avx2(int64_t n, const void* w, const void* x);

// Float rows to blocks (k_quants_quantize.cpp); n a multiple of 256, unchecked. Without an
// imatrix (null): ggml's quantize_row_<type>_ref; with one (n importance weights, one per
// column, as llama-quantize passes them): ggml's quantize_<type> with quant_weights.
void quantize_row_q4_K(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_row_q5_K(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_row_q6_K(const float* x, void* y, int64_t n, const float* imatrix);

}  // namespace strata::quant
