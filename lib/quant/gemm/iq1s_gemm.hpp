// IQ1_S x Q8_K products of many tokens at once (prefill), on AVX-512 VNNI CPUs and, with other
// panels and the same bits, on AVX2 ones.
//
// The one-row dot (quant/dot/iq1s_dot_avx2.cpp) spends most of its time decoding weights: 32 grid
// lookups and their shuffles per superblock, for every token again. Here a tile of rows is decoded
// once into a packed panel, and every token of the call reuses it.
//
// AVX-512 VNNI (iq1s_gemm_avx512.cpp): sixteen rows in the sixteen int32 lanes of a register. The
// panel holds, per superblock, 64 registers of four weights of each row as unsigned bytes
// u = ls * grid + 16 (the sub-block scale 2l+1 folded in, within 1..31); one VPDPBUSD multiplies one
// register by four of a token's activations broadcast from memory, so eight tokens share each
// weight load and no lane sums need adding across lanes. Per superblock and (row, token), with
// bsp_s the sum of sub-block s's activations (from Q8_K's bsums):
//   S = 8 * sum u q  +  sum_s (ls_s * sign_s - 128) * bsp_s   (four VPDPWSSD)
//     = 8 * sumi + sumi1                                        (the 16 * sum q terms cancel)
// an exact integer (|S| < 2^24), so S / 8 == sumi + sumi1 / 8 in float32, and
//   acc = fma(d_iq1 * d_q8, S / 8, acc)
// is the scalar kernel's step (quant/dot/iq1s_dot.hpp, ggml's generic kernel) lane for lane.
// AVX2 (iq1s_gemm_avx2.cpp): 4 rows x 2 tokens, int8 weights ls * grid against q + 128 with a
// per-row correction (VPMADDUBSW + VPMADDWD), the lane sums added in integers to the same S.
//
// Bit-exactness: every output is bit-identical to vec_dot_iq1s_q8k_scalar (and so to
// vec_dot_iq1s_q8k_simd, the one-token kernel of the CPU backend) of that row and token, whatever
// the tile, token count or thread split.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/iq/iq1s_block.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::quant {

// Tokens packed together by the AVX2 kernel: a token range handed to iq1s_gemm_pack_act starts at a
// multiple of this (the AVX-512 kernel packs tokens one by one).
inline constexpr int kIq1sGemmTokenGroup = 2;

// True when this CPU runs the kernels (AVX2+FMA+F16C, and $STRATA_CPU is not "scalar"); they use
// AVX-512 F/BW/VL/DQ/VNNI where the CPU has it.
bool iq1s_gemm_available();

// From how many tokens the GEMM beats the one-row kernel run per token on this CPU (measured with
// bench/bench_iq1s_gemm). Both give the same bits, so this trades speed only.
int64_t iq1s_gemm_min_tokens();

// Bytes of the packed activations of n_tok tokens of n columns (n a multiple of 256), linear in
// n_tok for whole token groups, and of the packed weights of n_rows rows (padded to whole panels).
size_t iq1s_gemm_act_bytes(int64_t n, int64_t n_tok);
size_t iq1s_gemm_weight_bytes(int64_t n, int64_t n_rows);

// Packs n_tok tokens of Q8_K activations (token t's blocks at x + t * n/256) into `packed`
// (iq1s_gemm_act_bytes, 64-byte aligned). iq1s_gemm_available() CPUs only.
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
