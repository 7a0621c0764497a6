// Decode products (1 to kGemvMaxTokens activation rows) on the GPU: y[t][r] = W[r] . x[t].
//
// IQ1_S: the fused kernel. Activations are quantized on the GPU to Q8_K exactly as the CPU backend
// quantizes them (quant/q8_k.hpp, byte for byte), so each 256-weight block contributes the same
// integers (quant::iq1s_block_sums) as on the CPU and only the float summation order differs.
// The weight bytes are read once, with coalesced 16-byte loads, decoded in registers (grid table
// in shared memory) and dotted with __dp4a; no dequantized weight is ever written.
// Q8_0: activations quantized to Q8_0 as the CPU does, integer dot per 32-block.
// F32 / F16 / BF16: float dot with x directly (no quantization; act ignored).
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemv.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "device_matrix.hpp"

namespace strata::cuda {

inline constexpr int kGemvMaxTokens = 8;

// True for the weight types gemv takes (F32, F16, BF16, Q8_0, IQ1_S).
bool gemv_supports(uint32_t weight_type);

// Bytes of quantized activations gemv needs for n_tokens rows of cols values with weights of this
// type: Q8_K blocks (IQ1_S), Q8_0 blocks (Q8_0), 0 for float types.
size_t gemv_act_bytes(uint32_t weight_type, int64_t cols, int n_tokens);

// x [n_tokens][cols] (device) -> act, in the activation format of weight_type, byte-identical to
// the CPU's quantize_row_q8_k / quantize_row_q8_0 of each row. No-op for float types. Takes any
// n_tokens >= 1 (not only gemv's kGemvMaxTokens: the MoE kernels quantize one row per chosen
// expert, moe.cuh) up to 2^31 - 1 blocks in all.
cudaError_t quantize_activations(uint32_t weight_type, const float* x, int64_t cols, int n_tokens, void* act,
                                 cudaStream_t stream);

// y [n_tokens][w.rows] = W x for 1 <= n_tokens <= kGemvMaxTokens; act from quantize_activations
// of the same x (IQ1_S, Q8_0). cudaErrorInvalidValue for an unsupported type or token count, cols
// not a multiple of the type's block, row_bytes not the packed row size, act not 4-byte aligned,
// or IQ1_S rows of more than 65,536 columns (eight such rows are staged in shared memory twice).
cudaError_t gemv(const DeviceMatrix& w, const float* x, const void* act, int n_tokens, float* y, cudaStream_t stream);

}  // namespace strata::cuda
