// The element-wise and data-movement operations of the deepseek2 / kimi-linear / kimi-k3 forward
// pass on the GPU (cuda/gpu_context_*.cpp), each the arithmetic of its CPU counterpart in
// lib/exec (context_mla.cpp, context_moe.cpp, context_kimi.cpp) up to float summation order.
// Launch only: each returns cudaErrorInvalidValue for a null pointer or bad shape without
// launching, cudaSuccess without launching for an empty input, else the launch's error.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_model_ops.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace strata::cuda {

// out[r][0..n) = x[r][0..n) / sqrt(mean(x[r][0..n)^2) + eps) * w for n_rows rows, x rows
// x_stride floats apart and out rows out_stride apart (out may be x: in place). Values of a row
// past n are not touched (MLA: the latent is normed, the rope key after it is not).
cudaError_t rms_norm_strided(const float* x, int64_t x_stride, const float* w, int64_t n, int n_rows, float eps,
                             float* out, int64_t out_stride, cudaStream_t stream);

// The FFN activation in place, n values: SwiGLU gate = silu(gate) * up when situ_beta <= 0;
// otherwise SiTU (K3): gate = b tanh(gate/b) sigmoid(gate) * (l > 0 ? l tanh(up/l) : up) with
// b = situ_beta, l = situ_linear_beta (exec::Context::activate).
cudaError_t ffn_activate(float* gate, const float* up, size_t n, float situ_beta, float situ_linear_beta,
                         cudaStream_t stream);

// x[i] *= sigmoid(g[i]) for n values (output gates).
cudaError_t mul_sigmoid(float* x, const float* g, size_t n, cudaStream_t stream);

// Head-major gather: dst[h][t][i] = src[t * token_stride + h * head_stride + offset + i] for
// h < n_heads, t < n_tokens, i < width (dst contiguous: [n_heads][n_tokens][width]).
cudaError_t gather_heads(const float* src, int n_tokens, int n_heads, int64_t token_stride, int64_t head_stride,
                         int64_t offset, int64_t width, float* dst, cudaStream_t stream);

// Its inverse for a contiguous destination row: dst[t * n_heads * width + h * width + i] =
// src[h][t][i] (the per-head outputs back into token-major rows).
cudaError_t scatter_heads(const float* src, int n_tokens, int n_heads, int64_t width, float* dst, cudaStream_t stream);

// K3 attention residuals, per token t < n_tokens: the entries are the n_bank checkpoints
// bank[t][j] (j < n_bank; bank rows bank_stride floats apart per token, entry j at j * E) and
// x[t] itself (last); score_e = (e . w) / sqrt(mean(e^2) + eps), softmax over the n_bank + 1
// scores, out[t] = sum of the entries weighted by it (exec::Context::attn_res_mix). out must
// not alias x or bank.
cudaError_t attn_res_mix(const float* x, const float* bank, int n_bank, int64_t bank_stride, const float* w,
                         int n_tokens, int64_t E, float eps, float* out, cudaStream_t stream);

// dst[r][0..width) = src[rows[r]][0..width) for r < n_rows (rows: device indices into src).
cudaError_t gather_rows(const float* src, const int32_t* rows, int n_rows, int64_t width, float* dst,
                        cudaStream_t stream);

// MoE combine, per token t < n_tokens: out[t][c] = sum over i < k, in the order of i, of
// weights[t][i] * src[rows[t][i]][c] (rows, weights: [n_tokens][k] device arrays; the caller
// orders each token's slots by ascending expert, as the CPU sums them).
cudaError_t moe_combine(const float* src, const int32_t* rows, const float* weights, int n_tokens, int k,
                        int64_t width, float* out, cudaStream_t stream);

}  // namespace strata::cuda
