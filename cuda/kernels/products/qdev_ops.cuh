// The handful of device intrinsics the quantized kernels use (byte-wise integer dot, byte-wise
// subtraction, byte permutation, rounded float ops, binary16 loads, unaligned 32-bit loads), each
// with a scalar host twin of the same result. The per-type decoders and dot parts
// (qtype_decode.cuh, qtype_dot.cuh) are written over these, so the CPU tests compile the exact code
// the GPU runs and check it against lib/quant (cuda/tests/test_qtype_host.cu, no GPU needed).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

#include "quant/half.hpp"
#include "quant/hd.hpp"

namespace strata::cuda::qdev {

// sum over the four byte lanes of int8(a_k) * int8(b_k), plus c (__dp4a).
STRATA_HD int dp4a(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
    return __dp4a(a, b, c);
#else
    for (int k = 0; k < 4; ++k) c += int(int8_t(uint8_t(uint32_t(a) >> (8 * k)))) * int(int8_t(uint8_t(uint32_t(b) >> (8 * k))));
    return c;
#endif
}

// Byte-wise a - b modulo 256, no borrow between bytes (__vsub4).
STRATA_HD uint32_t vsub4(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __vsub4(a, b);
#else
    uint32_t r = 0;
    for (int k = 0; k < 4; ++k) r |= (((a >> (8 * k)) - (b >> (8 * k))) & 0xffu) << (8 * k);
    return r;
#endif
}

// __byte_perm(lo, hi, s): byte k of the result is byte (s >> 4k) & 7 of the 8-byte value hi:lo.
STRATA_HD uint32_t byte_perm(uint32_t lo, uint32_t hi, uint32_t s) {
#if defined(__CUDA_ARCH__)
    return __byte_perm(lo, hi, s);
#else
    const uint64_t v = uint64_t(hi) << 32 | lo;
    uint32_t r = 0;
    for (int k = 0; k < 4; ++k) r |= uint32_t((v >> (8 * ((s >> (4 * k)) & 7u))) & 0xffu) << (8 * k);
    return r;
#endif
}

// Float products and sums rounded one by one, never contracted into a fused multiply-add (lib/ is
// built with -ffp-contract=off; nvcc would otherwise fuse a * b - c).
STRATA_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
STRATA_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
STRATA_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

// binary16 bits to float32, exactly (the hardware conversion on the device).
STRATA_HD float f16(uint16_t h) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));
#else
    return quant::f16_to_f32(h);
#endif
}

// The little-endian 16- and 32-bit words at p. kAlign (1, 2 or 4) is the alignment p is known to
// have: the device reads a 4-aligned word at once, a 2-aligned one as two halves, else byte by byte.
STRATA_HD uint32_t ld16(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const uint16_t*>(p);
#else
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
#endif
}

template <int kAlign>
STRATA_HD uint32_t ld32(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
    if constexpr (kAlign >= 4) return *reinterpret_cast<const uint32_t*>(p);
    else if constexpr (kAlign == 2)
        return uint32_t(*reinterpret_cast<const uint16_t*>(p)) | uint32_t(*reinterpret_cast<const uint16_t*>(p + 2)) << 16;
    else return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
#else
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
#endif
}

// Bits 0..3 of s spread to bytes: byte k of the result is 0xff where bit k is set, else 0.
STRATA_HD uint32_t sign_mask4(uint32_t s) { return ((s & 0xfu) * 0x00204081u & 0x01010101u) * 0xffu; }

// Four signed bytes v with the sign of byte k flipped where bit k of s is set (v * -1 per byte,
// modulo 256: exact for magnitudes below 128).
STRATA_HD uint32_t apply_signs4(uint32_t v, uint32_t s) {
    const uint32_t m = sign_mask4(s);
    return vsub4(v ^ m, m);
}

// Sixteen int8 values packed in four words (entry i = byte i % 4 of word i / 4) looked up by the
// four 4-bit codes in the low nibbles of the bytes of q (high nibbles ignored): byte k of the
// result is table[code of byte k].
STRATA_HD uint32_t lookup16(const uint32_t (&table)[4], uint32_t q) {
    const uint32_t t = q & 0x07070707u;
    const uint32_t u = t | (t >> 4);
    const uint32_t sel = (u & 0xffu) | ((u >> 8) & 0xff00u);
    const uint32_t lo = byte_perm(table[0], table[1], sel);
    const uint32_t hi = byte_perm(table[2], table[3], sel);
    const uint32_t m = ((q & 0x08080808u) >> 3) * 0xffu;
    return (lo & ~m) | (hi & m);
}

}  // namespace strata::cuda::qdev
