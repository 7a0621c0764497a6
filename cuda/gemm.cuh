// Prefill products (batch 16 to 4096) on the GPU, two paths the backend chooses between by
// measurement (matmul.hpp):
//   mma:    IQ1_S tiles dequantized into shared memory feeding tensor-core MMA (f16 in, f32
//           accumulate), activations as f16;
//   cublas: weight row panels dequantized to f16 (any type), then cuBLAS f16 GEMM with f32
//           accumulation (cublas_loader.hpp).
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemm.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "device_matrix.hpp"

namespace strata::cuda {

// Rows [row0, row0 + n_rows) of w as f16, row-major [n_rows][w.cols] (any gemv type).
cudaError_t dequantize_rows_f16(const DeviceMatrix& w, int64_t row0, int64_t n_rows, __half* out, cudaStream_t stream);

// out[i] = half(x[i]) for n values.
cudaError_t f32_to_f16(const float* x, size_t n, __half* out, cudaStream_t stream);

// y [n_tokens][w.rows] = W x for IQ1_S weights, x as f16 [n_tokens][w.cols]; any n_tokens >= 1.
cudaError_t gemm_iq1s_mma(const DeviceMatrix& w, const __half* x, int n_tokens, float* y, cudaStream_t stream);

}  // namespace strata::cuda
