// The launchers behind gemv and quantize_activations (gemv.cuh), one per weight family, each in
// its own .cu file. Arguments are checked by gemv.cu before these are called: n_tokens in
// 1..kGemvMaxTokens, cols a positive multiple of the type's block, row_bytes the packed row size,
// rows >= 1, non-null pointers. Internal to the cuda/ kernels.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemv.cu).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "runtime/device_matrix.hpp"

namespace strata::cuda::gemv_detail {

// Fused IQ1_S x Q8_K (gemv_iq1s.cu); act: n_tokens rows of cols/256 block_q8_K, 4-byte aligned.
cudaError_t launch_iq1s(const DeviceMatrix& w, const void* act, int n_tokens, float* y, cudaStream_t stream);

// Q8_0 x Q8_0 (gemv_dense.cu); act: n_tokens rows of cols/32 block_q8_0, 2-byte aligned.
cudaError_t launch_q8_0(const DeviceMatrix& w, const void* act, int n_tokens, float* y, cudaStream_t stream);

// The fused kernels of the Kimi types (gemv_fused.cuh): Q4_K, Q5_K, Q6_K (gemv_fused_k.cu); IQ1_M,
// IQ2_XXS, IQ3_XXS, IQ4_XS, IQ4_NL (gemv_fused_iq.cu). act: n_tokens rows of the type's activation
// blocks (Q8_K, or Q8_0 for IQ4_NL), 4-byte aligned; w.data aligned as QDot<type>::kAlign.
cudaError_t launch_fused_k(const DeviceMatrix& w, const void* act, int n_tokens, float* y, cudaStream_t stream);
cudaError_t launch_fused_iq(const DeviceMatrix& w, const void* act, int n_tokens, float* y, cudaStream_t stream);

// Dequantize-then-dot for the quantized types without a fused kernel (gemv_decode.cu), with the
// float activations x (4-byte aligned); w.data aligned as the type's block struct.
cudaError_t launch_decode(const DeviceMatrix& w, const float* x, int n_tokens, float* y, cudaStream_t stream);

// F32 / F16 / BF16 weights times float activations (gemv_dense.cu).
cudaError_t launch_float(const DeviceMatrix& w, const float* x, int n_tokens, float* y, cudaStream_t stream);

// Activation quantizers (quantize_act.cu): x [n_tokens][cols] -> blocks, byte-identical to the CPU.
cudaError_t launch_quantize_q8_k(const float* x, int64_t cols, int n_tokens, void* act, cudaStream_t stream);
cudaError_t launch_quantize_q8_0(const float* x, int64_t cols, int n_tokens, void* act, cudaStream_t stream);

}  // namespace strata::cuda::gemv_detail
