// Decode products (1 to kGemvMaxTokens activation rows) on the GPU: y[t][r] = W[r] . x[t].
//
// Every weight type of gpu_types.hpp (all that the CPU backend multiplies):
// IQ1_S: the fused kernel. Activations are quantized on the GPU to Q8_K exactly as the CPU backend
// quantizes them (quant/codecs/q8_k.hpp, byte for byte), so each 256-weight block contributes the same
// integers (quant::iq1s_block_sums) as on the CPU and only the float summation order differs.
// The weight bytes are read once, with coalesced 16-byte loads, decoded in registers (grid table
// in shared memory) and dotted with __dp4a; no dequantized weight is ever written.
// Q8_0: activations quantized to Q8_0 as the CPU does, integer dot per 32-block.
// Q4_K, Q5_K, Q6_K, IQ4_XS, IQ2_XXS, IQ3_XXS, IQ1_M (Q8_K activations) and IQ4_NL (Q8_0): the
// fused kernels of gemv_fused.cuh, each weight block read once, integer dots with __dp4a whose
// per-block integers are those of lib/quant's dots.
// The other quantized types (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, IQ2_XS, IQ2_S, IQ3_S, TQ1_0,
// TQ2_0, MXFP4, Q1_0): dequantized in registers (bit for bit lib/quant's decoder) and dotted in
// float32 with x directly (gemv_decode.cu; exact, slower).
// F32 / F16 / BF16: float dot with x directly (no quantization; act ignored).
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemv.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "runtime/device_matrix.hpp"

namespace strata::cuda {

inline constexpr int kGemvMaxTokens = 8;

// True for the weight types gemv takes (gpu_types.hpp).
bool gemv_supports(uint32_t weight_type);

// The alignment in bytes gemv needs of a matrix of this type's first byte (its rows keep it):
// 1, 2 or 4; 0 for a type gemv does not take.
int gemv_weight_align(uint32_t weight_type);

// The activation format gemv reads for weights of this type: quant::kTypeQ8_K, kTypeQ8_0, or
// kTypeF32 (the float x itself; also for a type gemv does not take).
uint32_t gemv_act_type(uint32_t weight_type);

// Bytes of quantized activations gemv needs for n_tokens rows of cols values with weights of this
// type: Q8_K or Q8_0 blocks (gemv_act_type), 0 where gemv reads x itself.
size_t gemv_act_bytes(uint32_t weight_type, int64_t cols, int n_tokens);

// x [n_tokens][cols] (device) -> act, in the activation format of weight_type, byte-identical to
// the CPU's quantize_row_q8_k / quantize_row_q8_0 of each row. No-op where gemv reads x itself. Takes any
// n_tokens >= 1 (not only gemv's kGemvMaxTokens: the MoE kernels quantize one row per chosen
// expert, moe.cuh) up to 2^31 - 1 blocks in all.
cudaError_t quantize_activations(uint32_t weight_type, const float* x, int64_t cols, int n_tokens, void* act,
                                 cudaStream_t stream);

// y [n_tokens][w.rows] = W x for 1 <= n_tokens <= kGemvMaxTokens; act from quantize_activations
// of the same x (types with quantized activations), x otherwise. cudaErrorInvalidValue for an
// unsupported type or token count, cols not a multiple of the type's block, row_bytes not the
// packed row size, act not 4-byte aligned, w.data not aligned as the type's kernel reads it (2 or 4
// bytes; uploads are 256-byte aligned), or IQ1_S rows of more than 65,536 columns (eight such rows
// are staged in shared memory twice).
cudaError_t gemv(const DeviceMatrix& w, const float* x, const void* act, int n_tokens, float* y, cudaStream_t stream);

}  // namespace strata::cuda
