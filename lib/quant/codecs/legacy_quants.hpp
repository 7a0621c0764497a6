// Q4_0, Q4_1, Q5_0, Q5_1: ggml's original ("legacy") formats of 32 weights per block, and Q8_1,
// the activation format that Q4_1 and Q5_1 dot with. Bit-compatible with ggml's block_q4_0 ..
// block_q8_1. All binary16 fields are uint16_t.
//
//   Q4_0  d, qs[16]           weight j = d * (q_j - 8),  q_j 4 bits
//   Q4_1  d, m, qs[16]        weight j = d * q_j + m,    q_j 4 bits
//   Q5_0  d, qh[4], qs[16]    weight j = d * (q_j - 16), q_j 5 bits
//   Q5_1  d, m, qh[4], qs[16] weight j = d * q_j + m,    q_j 5 bits
// The low four bits of q_j are the low nibble of qs[j] for j < 16 and the high nibble of
// qs[j - 16] for j >= 16 (so byte j pairs weight j with weight j + 16). For Q5_*, qh read as one
// little-endian uint32 holds the fifth bit of q_j at bit j.
//
//   Q8_1  d, s, qs[32]        value j = d * qs[j]; s = binary16(d * sum of qs), so a dot with a
//                             Q4_1/Q5_1 row adds m * s for the min without touching qs again.
//
// Products are formed as ggml's C does (x * d, then + m, each rounded): the CUDA path gets the
// same through legacy_mul_add, since nvcc would otherwise fuse them.
#pragma once

#include <array>
#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"

namespace strata::quant {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_1 = 32;

struct block_q4_0 {
    uint16_t d;
    uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(block_q4_0) == 18, "block_q4_0 must be 18 bytes, as ggml writes it");

struct block_q4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[kQK4_1 / 2];
};
static_assert(sizeof(block_q4_1) == 20, "block_q4_1 must be 20 bytes, as ggml writes it");

struct block_q5_0 {
    uint16_t d;
    uint8_t qh[4];  // a byte array in ggml: the block is 2-byte aligned
    uint8_t qs[kQK5_0 / 2];
};
static_assert(sizeof(block_q5_0) == 22, "block_q5_0 must be 22 bytes, as ggml writes it");

struct block_q5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK5_1 / 2];
};
static_assert(sizeof(block_q5_1) == 24, "block_q5_1 must be 24 bytes, as ggml writes it");

struct block_q8_1 {
    uint16_t d;  // binary16 scale
    uint16_t s;  // binary16 of d * sum(qs)
    int8_t qs[kQK8_1];
};
static_assert(sizeof(block_q8_1) == 36, "block_q8_1 must be 36 bytes, as ggml (half d, half s) writes it");

// a * b + c with two roundings, never fused (host code is built with -ffp-contract=off).
STRATA_HD float legacy_mul_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(__fmul_rn(a, b), c);
#else
    return a * b + c;
#endif
}

// The 5-bit code of weight j (0..31) of a Q5_0/Q5_1 block: low nibble from qs, bit 4 from qh.
STRATA_HD int q5_code(const uint8_t* qs, const uint8_t* qh, int j) {
    const uint32_t high = uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
    const int low = j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4);
    return low | int((high >> j) & 1u) << 4;
}

STRATA_HD int q4_code(const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4); }

// Bit k of a byte -> byte k (0 or 1) of a little-endian uint64: the row kernels expand Q5's fifth
// bits and Q1_0's sign bits eight at a time through it (host only; computed, not data).
constexpr std::array<uint64_t, 256> make_bits_to_bytes() {
    std::array<uint64_t, 256> t{};
    for (int b = 0; b < 256; ++b)
        for (int k = 0; k < 8; ++k) t[size_t(b)] |= uint64_t((b >> k) & 1) << (8 * k);
    return t;
}
inline constexpr std::array<uint64_t, 256> kBitsToBytes = make_bits_to_bytes();

// One block to 32 floats, bit for bit as ggml's dequantize_row_*.
STRATA_HD void q4_0_decode_block(const block_q4_0& b, float* out) {
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK4_0; ++j) out[j] = float(q4_code(b.qs, j) - 8) * d;
}

STRATA_HD void q4_1_decode_block(const block_q4_1& b, float* out) {
    const float d = f16_to_f32(b.d);
    const float m = f16_to_f32(b.m);
    for (int j = 0; j < kQK4_1; ++j) out[j] = legacy_mul_add(float(q4_code(b.qs, j)), d, m);
}

STRATA_HD void q5_0_decode_block(const block_q5_0& b, float* out) {
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK5_0; ++j) out[j] = float(q5_code(b.qs, b.qh, j) - 16) * d;
}

STRATA_HD void q5_1_decode_block(const block_q5_1& b, float* out) {
    const float d = f16_to_f32(b.d);
    const float m = f16_to_f32(b.m);
    for (int j = 0; j < kQK5_1; ++j) out[j] = legacy_mul_add(float(q5_code(b.qs, b.qh, j)), d, m);
}

STRATA_HD void q8_1_decode_block(const block_q8_1& b, float* out) {
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK8_1; ++j) out[j] = float(b.qs[j]) * d;
}

// Rows: n a multiple of 32 (not checked).
void decode_row_q4_0(const void* blocks, float* y, int64_t n);
void decode_row_q4_1(const void* blocks, float* y, int64_t n);
void decode_row_q5_0(const void* blocks, float* y, int64_t n);
void decode_row_q5_1(const void* blocks, float* y, int64_t n);
// ggml has no dequantize_row_q8_1 (Q8_1 is never stored in files); this is value j = d * qs[j].
void decode_row_q8_1(const void* blocks, float* y, int64_t n);

// ggml's quantize_row_*_ref, byte for byte (gguf.quants.quantize gives the same bytes for finite
// input): Q4_0/Q5_0 scale by the first element of largest magnitude, d = max / -8 (or -16);
// Q4_1/Q5_1 span [min, max], d = (max - min) / 15 (or 31), m = min. Codes are
// trunc(x * (1/d) + 8.5) (resp. 16.5, or (x - min) * (1/d) + 0.5), clamped as ggml does.
// imatrix is ignored (ggml's reference quantizers take none).
void quantize_row_q4_0(const float* x, void* blocks, int64_t n, const float* imatrix);
void quantize_row_q4_1(const float* x, void* blocks, int64_t n, const float* imatrix);
void quantize_row_q5_0(const float* x, void* blocks, int64_t n, const float* imatrix);
void quantize_row_q5_1(const float* x, void* blocks, int64_t n, const float* imatrix);

// ggml's quantize_row_q8_1_ref: d = max|x| / 127, qs = roundf(x * (1/d)) (half away from zero,
// so |qs| <= 127), s = binary16(float(sum qs) * d).
void quantize_row_q8_1(const float* x, block_q8_1* y, int64_t n);

// One weight row of n values against n activations (ggml-cpu's vec_dot_type for each: Q8_0 for
// Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1). Integer sums per block, scaled in ggml's generic order:
//   q4_0 x q8_0  sum += float(sumi) * d_w * d_x
//   q5_0 x q8_0  sum += (d_w * d_x) * float(sumi)
//   q8_0 x q8_0  sum += float(sumi) * (d_w * d_x)
//   q4_1/q5_1 x q8_1  sum += (d_w * d_x) * float(sumi) + m_w * s_x
// n a positive multiple of 32 (not checked).
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* x);
float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* x);
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x);

// AVX2 kernels (legacy_dot_avx2.cpp; call only on CPUs with AVX2+FMA+F16C). Each block's integer
// sum is the scalar kernel's, computed exactly for all weight bytes and all activation bytes,
// except that vec_dot_q8_0_q8_0_avx2 requires activations in [-127, 127] (what quantize_row_q8_0
// produces; ggml's AVX2 kernel has the same precondition). Only the float accumulation order
// differs from the scalar kernels (eight lanes, FMA, one horizontal sum at the end).
// (vec_dot_mxfp4_q8_0_avx2, in the same file, is declared in mxfp4.hpp.)
float vec_dot_q8_0_q8_0_avx2(int64_t n, const void* w, const void* x);
float vec_dot_q4_0_q8_0_avx2(int64_t n, const void* w, const void* x);
float vec_dot_q4_1_q8_1_avx2(int64_t n, const void* w, const void* x);
float vec_dot_q5_0_q8_0_avx2(int64_t n, const void* w, const void* x);
float vec_dot_q5_1_q8_1_avx2(int64_t n, const void* w, const void* x);

}  // namespace strata::quant
