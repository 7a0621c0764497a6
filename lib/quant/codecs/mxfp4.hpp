// MXFP4 (OCP microscaling FP4): blocks of 32 weights as one E8M0 exponent byte and 32 four-bit
// E2M1 codes, bit-compatible with ggml's block_mxfp4 (17 bytes, no alignment).
//   e       E8M0 scale exponent: the block scale is 2^(e - 127)
//   qs[16]  byte j: low nibble = code of weight j, high nibble = code of weight j + 16
// ggml keeps the codebook doubled as int8 (kMxfp4Values: 0, 1, 2, 3, 4, 6, 8, 12 and negatives)
// and halves the scale instead, so weight = kMxfp4Values[code] * 2^(e - 128), computed as
// float(value) * mxfp4_half_scale(e): both factors are exact and so is the product.
#pragma once

#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"

namespace strata::quant {

inline constexpr int kQK_MXFP4 = 32;

struct block_mxfp4 {
    uint8_t e;
    uint8_t qs[kQK_MXFP4 / 2];
};
static_assert(sizeof(block_mxfp4) == 17, "block_mxfp4 must be 17 bytes, as ggml writes it");

// ggml's kvalues_mxfp4, generated from the gguf package's table by tools/gen_mxfp4_values.py.
inline constexpr int8_t kMxfp4Values[16] = {
#include "mxfp4_values.inc"
};

// ggml_e8m0_to_fp32_half: 2^(e - 128) as float32 bits; e = 0 and 1 give the subnormals 2^-128
// and 2^-127, e = 255 gives 2^127 (never Inf or NaN).
STRATA_HD float mxfp4_half_scale(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
    return bits_to_f32(bits);
}

// One block to 32 floats, bit for bit as ggml's dequantize_row_mxfp4; values is kMxfp4Values
// (or the device's copy of it).
STRATA_HD void mxfp4_decode_block(const block_mxfp4& b, const int8_t* values, float* out) {
    const float d = mxfp4_half_scale(b.e);
    for (int j = 0; j < kQK_MXFP4 / 2; ++j) {
        out[j] = float(values[b.qs[j] & 0x0f]) * d;
        out[j + kQK_MXFP4 / 2] = float(values[b.qs[j] >> 4]) * d;
    }
}

// n a multiple of 32 (not checked).
void decode_row_mxfp4(const void* blocks, float* y, int64_t n);

// One MXFP4 row against n Q8_0 activations (ggml's vec_dot_type for MXFP4), as
// ggml_vec_dot_mxfp4_q8_0_generic: per block d = d_x * half_scale(e), sum += d * float(sumi).
float vec_dot_mxfp4_q8_0(int64_t n, const void* w, const void* x);
// AVX2 (in legacy_dot_avx2.cpp; AVX2+FMA+F16C CPUs only): the same integer sum per block for
// every byte (codebook lookup by vpshufb), float accumulation in eight lanes with FMA.
float vec_dot_mxfp4_q8_0_avx2(int64_t n, const void* w, const void* x);

}  // namespace strata::quant
