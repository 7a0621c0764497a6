// IQ1_S x Q8_K products of many tokens at once (prefill), on AVX-512 VNNI CPUs (and with the
// same panels and bits on AVX2 ones: VPMADDUBSW + VPMADDWD in place of VPDPBUSD).
//
// The one-row dot (iq1s_dot_avx2.cpp) spends most of its time decoding weights: 32 grid lookups
// and their shuffles per superblock, for every token again. Here a tile of rows is decoded once
// into a packed panel of int8 weights w = ls * grid (the sub-block scale 2l+1 folded in, within
// +-15), and each token's Q8_K block is packed once as unsigned bytes q + 128. One VPDPBUSD then
// multiplies 64 weights by 64 activations, four per superblock per (row, token):
//   sum (q + 128) * w = sum q * w + 128 * sum w,
// and the last term depends on the row only, so it is packed with the weights and subtracted.
//
// Bit-exactness: for every (row, token) the eight int32 lane sums per superblock are exactly the
// one-row AVX2 kernel's (lane k: weights 32s+4k..32s+4k+3 of every sub-block s; a 512-bit register
// holds two sub-blocks, whose halves are added), and so is sumi1; the float32 operations that follow
// (d = d_q8 * d_iq1, acc += d * lanes, acc1 += d * sumi1, ggml's horizontal sum, h + acc1/8) are
// the same operations in the same order. So every output is bit-identical to
// vec_dot_iq1s_q8k_avx2 of that row and token, whatever the tile, token count or thread split.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/iq/iq1s_block.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::quant {

inline constexpr int kIq1sGemmRowGroup = 4;    // rows packed (and multiplied) together
inline constexpr int kIq1sGemmTokenGroup = 2;  // tokens packed (and multiplied) together

// True when this CPU runs the kernels (AVX2+FMA+F16C, and $STRATA_CPU is not "scalar"); they use
// AVX-512 F/BW/VL/DQ/VNNI where the CPU has it.
bool iq1s_gemm_available();

// From how many tokens the GEMM beats the one-row kernel run per token on this CPU (measured with
// bench/bench_iq1s_gemm on a Xeon with AVX-512: 2 tokens for the VNNI kernel, 8 for the AVX2 one,
// whose scalar grid lookups while packing cost more). Both give the same bits, so this trades
// speed only.
int64_t iq1s_gemm_min_tokens();

// Bytes of the packed activations of n_tok tokens of n columns (n a multiple of 256; tokens padded
// to whole groups), and of the packed weights of n_rows rows (padded to whole groups).
size_t iq1s_gemm_act_bytes(int64_t n, int64_t n_tok);
size_t iq1s_gemm_weight_bytes(int64_t n, int64_t n_rows);

// Packs n_tok tokens of Q8_K activations (token t's blocks at x + t * n/256) into `packed`
// (iq1s_gemm_act_bytes, 64-byte aligned). Padding tokens are zeroed. iq1s_gemm_available() CPUs only.
void iq1s_gemm_pack_act(int64_t n, const block_q8_K* x, int64_t n_tok, void* packed);

// Packs n_rows rows (row i at w + i * row_stride_blocks) into `packed` (iq1s_gemm_weight_bytes,
// 64-byte aligned). Padding rows are zeroed. iq1s_gemm_available() CPUs only.
void iq1s_gemm_pack_weights(int64_t n, const block_iq1_s* w, int64_t row_stride_blocks, int64_t n_rows, void* packed);

// y[t * y_stride + r] = dot(row r, token t0 + t) for r < n_rows, t < n_tok, from panels packed by
// the two functions above (the weights of exactly n_rows rows; t0 a multiple of
// kIq1sGemmTokenGroup, the tokens within the packed ones). iq1s_gemm_available() CPUs only.
void iq1s_gemm(int64_t n, const void* packed_w, int64_t n_rows, const void* packed_act, int64_t t0, int64_t n_tok,
               float* y, int64_t y_stride);

}  // namespace strata::quant
