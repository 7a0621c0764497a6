// IQ4_NL: blocks of 32 weights as one binary16 scale and 32 four-bit codes into a fixed
// non-linear codebook, bit-compatible with ggml (block_iq4_nl). llama.cpp's IQ1_S mixes keep rows
// that are not a multiple of 256 (e.g. attn_k_b) in it; IQ4_XS (iq4_xs.hpp) shares the codebook.
//   d       binary16 scale
//   qs[16]  byte j: low nibble = code of weight j, high nibble = code of weight j + 16
// weight = d * kIq4nlValues[code]
#pragma once

#include <cstdint>

#include "quant/half.hpp"
#include "quant/hd.hpp"

namespace strata::quant {

inline constexpr int kQK4_NL = 32;

struct block_iq4_nl {
    uint16_t d;
    uint8_t qs[kQK4_NL / 2];
};
static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl must be 18 bytes, as ggml writes it");

// ggml's kvalues_iq4nl, generated from the gguf package's table by tools/gen_iq4nl_values.py.
// Host table; CUDA code keeps its own __constant__ copy (from the same .inc) and passes it to the
// decode functions, which take the codebook as a pointer for that reason.
inline constexpr int8_t kIq4nlValues[16] = {
#include "iq4nl_values.inc"
};

// Code of weight j (0..31) of a 32-weight IQ4 sub-block packed as 16 bytes (IQ4_NL and IQ4_XS).
STRATA_HD int iq4_code(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 0x0f : qs[j - 16] >> 4; }

// d * value is exact in float32 (11 + 7 significant bits), so this equals ggml bit for bit.
STRATA_HD void iq4nl_decode_block(const block_iq4_nl& b, const int8_t* values, float out[kQK4_NL]) {
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK4_NL; ++j) out[j] = d * float(values[iq4_code(b.qs, j)]);
}

// n must be a multiple of 32.
void dequantize_row_iq4_nl(const block_iq4_nl* x, float* y, int64_t n);

// IQ4_NL x Q8_0 (x: n/32 block_q8_0 from quant/codecs/q8_0.hpp); n a multiple of 32, unchecked.
// Scalar: ggml_vec_dot_iq4_nl_q8_0_generic's arithmetic, per block
// sum = fma(d_q8 * d_iq4, sumi, sum) (GCC's contraction of ggml's sumf += d * sumi).
float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* x);
// Same integer sumi per block, other float rounding order. AVX2+FMA+F16C CPUs only.
float vec_dot_iq4_nl_q8_0_avx2(int64_t n, const void* w, const void* x);

}  // namespace strata::quant
