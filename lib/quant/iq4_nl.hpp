// IQ4_NL: blocks of 32 weights as one binary16 scale and 32 four-bit codes into a fixed
// non-linear codebook, bit-compatible with ggml (block_iq4_nl). Read only: strata decodes it
// (llama.cpp's IQ1_S mixes keep rows that are not a multiple of 256, e.g. attn_k_b, in it).
//   d       binary16 scale
//   qs[16]  byte j: low nibble = code of weight j, high nibble = code of weight j + 16
// weight = d * kIq4nlValues[code]
#pragma once

#include <cstdint>

namespace strata::quant {

inline constexpr int kQK4_NL = 32;

struct block_iq4_nl {
    uint16_t d;
    uint8_t qs[kQK4_NL / 2];
};
static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl must be 18 bytes, as ggml writes it");

// ggml's kvalues_iq4nl, generated from the gguf package's table by tools/gen_iq4nl_values.py.
inline constexpr int8_t kIq4nlValues[16] = {
#include "quant/iq4nl_values.inc"
};

// n must be a multiple of 32.
void dequantize_row_iq4_nl(const block_iq4_nl* x, float* y, int64_t n);

}  // namespace strata::quant
