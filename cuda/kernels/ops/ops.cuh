// The element-wise and small operations of the llama-family forward pass on the GPU, each the
// same arithmetic as its CPU counterpart in lib/exec (ops.hpp, rope.hpp) up to float summation
// order. Positions come from device memory (pos0: the sequence's n_past) so that a decode step
// captured once as a CUDA graph replays at every position.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_ops.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "runtime/device_matrix.hpp"

namespace strata::cuda {

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w for n_rows rows of n values (row stride n);
// out may alias x.
cudaError_t rms_norm(const float* x, const float* w, int64_t n, int n_rows, float eps, float* out, cudaStream_t stream);

// The same per head (qwen3 q/k norms): x [n_tokens][token_stride], heads of head_dim from 0.
cudaError_t head_rms_norm(float* x, const float* w, int n_tokens, int n_heads, int head_dim, int64_t token_stride,
                          float eps, cudaStream_t stream);

// x[i] += y[i]
cudaError_t add_inplace(float* x, const float* y, size_t n, cudaStream_t stream);

// x[t][c] += bias[c] for n_rows rows of width values.
cudaError_t add_row_bias(float* x, const float* bias, int64_t width, int n_rows, cudaStream_t stream);

// out[i] = dequantized row ids[i] of table (device ids, each in [0, table.rows)), n rows.
cudaError_t get_rows(const DeviceMatrix& table, const int32_t* ids, int n, float* out, cudaStream_t stream);

// Rotates n_heads heads of head_dim values per token, token t at position *pos0 + t; x is
// [n_tokens][token_stride]. cos/sin: [n_ctx][n_pairs] tables computed on the host by exec::Rope
// (the CPU's angles, mscale included); neox: pairs (i, i + n_rot/2), else (2i, 2i+1); dims past
// 2*n_pairs are left as they are.
cudaError_t rope(float* x, int n_tokens, int n_heads, int head_dim, int64_t token_stride, const float* cos_table,
                 const float* sin_table, int n_pairs, int neox, const int32_t* pos0, cudaStream_t stream);

// (swiglu: moe.cuh.)

}  // namespace strata::cuda
