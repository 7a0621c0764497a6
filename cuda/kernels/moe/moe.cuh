// MoE on the GPU for decode (deepseek2.md, "MoE"): routing with the shared route_token
// (lib/exec/moe/moe_route.hpp, the code the CPU forward pass runs), and grouped IQ1_S products that
// read the chosen experts' 50-byte blocks directly (never dequantized to memory): one launch
// computes every chosen expert's gate and up rows for a token, one launch the down rows weighted
// and summed. Expert ids stay on the device: no host round trip per layer.
//
// The products compute with the CPU's arithmetic (lib/exec/context/context_moe.cpp through the CPU
// backend): activations quantized to Q8_K (quantize_activations in gemv.cuh, byte-identical to
// quant::quantize_row_q8_k), the exact integers of quant::iq1s_block_sums per superblock, and the
// float32 steps of the CPU kernel named by `order` (quant/dot/iq1s_dot.hpp), so each row's dot is
// bit-identical to that CPU kernel's:
//   scalar  sum = fma(d_w * d_x, sumi + sumi1/8, sum), superblock after superblock;
//   avx2    eight accumulators (the AVX2 kernel's integer lanes) and one for sumi1, each by fma,
//           then ggml's horizontal sum; not bit-equal to scalar (tests/unit/quant/test_iq1s_dot.cpp);
//   best    the kernel the CPU backend picks on this host (quant::resolve_iq1s_kernel(best)).
// The down product sums a token's experts as the CPU does: out = 0, then out += w_i * dot_i in
// ascending expert id order, product and sum each rounded (nothing contracted).
//
// UNTESTED ON A GPU so far (no device was available when these were written); the CUDA tests
// in cuda/tests/test_moe_mla.cu check them bit for bit against the host kernels wherever a GPU exists.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "exec/moe/moe_route.hpp"
#include "quant/dot/iq1s_dot.hpp"

namespace strata::cuda {

// Chosen experts one moe_down_iq1s launch takes at most (its ascending order is sorted in shared
// memory); moe_gate_up_iq1s takes as many.
inline constexpr int kMoeMaxSelected = 1024;

// Workspace bytes moe_route needs for n_tokens tokens.
size_t moe_route_workspace_bytes(const exec::MoeRoute& r, int n_tokens);

// logits [n_tokens][n_expert], bias [n_expert] or null -> chosen/weights [n_tokens][n_used],
// margins [n_tokens] (or null). One thread per token. Chosen experts come in descending score order.
cudaError_t moe_route(const float* logits, const float* bias, const exec::MoeRoute& r, int n_tokens, void* workspace,
                      int32_t* chosen, float* weights, float* margins, cudaStream_t stream);

// A stack of n_expert IQ1_S matrices of rows x cols (cols % 256 == 0), expert e at
// base + e * rows * (cols / 256) * 50 bytes, as a GGUF [cols, rows, n_expert] tensor stores them.
struct Iq1sStack {
    const void* data;
    int64_t cols, rows, n_expert;
};

// For i < n_sel, e = chosen[i]: gate_out[i][r] = gate[e][r] . x, up_out[i][r] = up[e][r] . x, with
// x_q8k the token's input as cols/256 block_q8_K (quantize_activations of kTypeIQ1_S, 4-byte
// aligned). gate and up must have equal shapes. An expert id outside [0, n_expert) gives NaN rows.
// cudaErrorInvalidValue for bad shapes, null or misaligned pointers, n_sel < 0 or > kMoeMaxSelected.
cudaError_t moe_gate_up_iq1s(const Iq1sStack& gate, const Iq1sStack& up, const void* x_q8k, const int32_t* chosen,
                             int n_sel, quant::Iq1sKernel order, float* gate_out, float* up_out, cudaStream_t stream);

// h[i][c] = silu(gate_out[i][c]) * up_out[i][c] for n values (in place into gate_out).
cudaError_t swiglu(float* gate, const float* up, size_t n, cudaStream_t stream);

// out[r] = sum_i weights[i] * (down[chosen[i]][r] . h[i]) for r < down.rows, h_q8k: the n_sel
// activated rows as [n_sel][down.cols / 256] block_q8_K (quantize_activations of n_sel rows);
// the sum runs in ascending chosen[i] order (ids should be distinct; equal ids keep slot order),
// starting from 0, each product and sum rounded on its own. Deterministic, no atomics.
cudaError_t moe_down_iq1s(const Iq1sStack& down, const void* h_q8k, const int32_t* chosen, const float* weights,
                          int n_sel, quant::Iq1sKernel order, float* out, cudaStream_t stream);

}  // namespace strata::cuda
