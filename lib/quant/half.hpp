// IEEE binary16 and bfloat16 <-> float32, bit-exact, usable on host and device.
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/hd.hpp"

namespace strata::quant {

STRATA_HD float bits_to_f32(uint32_t bits) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
#endif
}

STRATA_HD uint32_t f32_to_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
#endif
}

// Exact: every binary16 value (subnormals, infinities, NaN payloads) is representable in float32.
STRATA_HD float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) return bits_to_f32(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return bits_to_f32(sign);
    // Subnormal: renormalize so the implicit leading one appears.
    int e = -1;
    do {
        ++e;
        mant <<= 1;
    } while ((mant & 0x400u) == 0);
    return bits_to_f32(sign | uint32_t(112 - e) << 23 | ((mant & 0x3ffu) << 13));
}

// Round to nearest even, overflow to infinity, NaN stays NaN (quiet bit set).
STRATA_HD uint16_t f32_to_f16(float f) {
    const uint32_t x = f32_to_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: infinity
    if (abs < 0x38800000u) {                                  // below the smallest normal half
        if (abs < 0x33000000u) return uint16_t(sign);         // below half the smallest subnormal
        const uint32_t e = abs >> 23;
        const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;  // 14..24
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
        return uint16_t(sign | q);
    }
    uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
    const uint32_t rem = r & 0x1fffu;
    r >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
    return uint16_t(sign | r);
}

STRATA_HD float bf16_to_f32(uint16_t b) { return bits_to_f32(uint32_t(b) << 16); }

// Round to nearest even; NaN stays NaN.
STRATA_HD uint16_t f32_to_bf16(float f) {
    const uint32_t x = f32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
    return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace strata::quant
