// Prefill products (batch 16 to 4096) on the GPU, two paths the backend chooses between by
// measurement (matmul.hpp), for every weight type (gpu_types.hpp):
//   mma:    weight tiles of any quantized type dequantized into shared memory (the type's decode8,
//           qtype_decode.cuh) feeding tensor-core MMA (f16 in, f32 accumulate), activations as f16;
//   cublas: weight row panels dequantized to f16 (any type, dequant.cu), then cuBLAS f16 GEMM
//           with f32 accumulation (cublas_loader.hpp).
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemm.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "runtime/device_matrix.hpp"

namespace strata::cuda {

// Rows [row0, row0 + n_rows) of w as f16, row-major [n_rows][w.cols] (any gemv type; dequant.cu).
cudaError_t dequantize_rows_f16(const DeviceMatrix& w, int64_t row0, int64_t n_rows, __half* out, cudaStream_t stream);

// out[i] = half(x[i]) for n values.
cudaError_t f32_to_f16(const float* x, size_t n, __half* out, cudaStream_t stream);

// Whether gemm_mma takes weights of this type and width: a quantized type (not F32/F16/BF16, which
// cuBLAS takes directly after a conversion) with rows of a whole number of 64-column chunks.
bool gemm_mma_supports(uint32_t type, int64_t cols);

// y [n_tokens][w.rows] = W x, x as f16 [n_tokens][w.cols] (16-byte aligned); any n_tokens >= 1.
// cudaErrorInvalidValue where gemm_mma_supports refuses, or for a misaligned or short matrix.
cudaError_t gemm_mma(const DeviceMatrix& w, const __half* x, int n_tokens, float* y, cudaStream_t stream);

}  // namespace strata::cuda
