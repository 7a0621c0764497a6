// MoE on the GPU for decode (deepseek2.md, "MoE"): routing with the shared route_token
// (lib/exec/moe_route.hpp, the code the CPU forward pass runs), and grouped IQ1_S products that
// read the chosen experts' 50-byte blocks directly (dequantized in registers, never written):
// one launch computes every chosen expert's gate and up rows for a token, one launch the down
// rows weighted and summed. Expert ids stay on the device: no host round trip per layer.
//
// UNTESTED ON A GPU so far (no device was available when these were written); the CUDA tests
// in cuda/tests/test_moe_mla.cu check them against host references wherever a GPU exists.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "exec/moe_route.hpp"

namespace strata::cuda {

// Workspace bytes moe_route needs for n_tokens tokens.
size_t moe_route_workspace_bytes(const exec::MoeRoute& r, int n_tokens);

// logits [n_tokens][n_expert], bias [n_expert] or null -> chosen/weights [n_tokens][n_used],
// margins [n_tokens] (or null). One thread per token.
cudaError_t moe_route(const float* logits, const float* bias, const exec::MoeRoute& r, int n_tokens, void* workspace,
                      int32_t* chosen, float* weights, float* margins, cudaStream_t stream);

// A stack of n_expert IQ1_S matrices of rows x cols (cols % 256 == 0), expert e at
// base + e * rows * (cols / 256) * 50 bytes, as a GGUF [cols, rows, n_expert] tensor stores them.
struct Iq1sStack {
    const void* data;
    int64_t cols, rows, n_expert;
};

// For i < n_sel, e = chosen[i]: gate_out[i][r] = gate[e][r] . x, up_out[i][r] = up[e][r] . x
// (x: cols floats, the token's normalized hidden state). gate and up must have equal shapes.
cudaError_t moe_gate_up_iq1s(const Iq1sStack& gate, const Iq1sStack& up, const float* x, const int32_t* chosen,
                             int n_sel, float* gate_out, float* up_out, cudaStream_t stream);

// h[i][c] = silu(gate_out[i][c]) * up_out[i][c] for n values (in place into gate_out).
cudaError_t swiglu(float* gate, const float* up, size_t n, cudaStream_t stream);

// out[r] = sum_i weights[i] * (down[chosen[i]][r] . h[i]) for r < down.rows, h: [n_sel][down.cols];
// the sum over i runs in the order of i inside one warp (deterministic, no atomics).
cudaError_t moe_down_iq1s(const Iq1sStack& down, const float* h, const int32_t* chosen, const float* weights, int n_sel,
                          float* out, cudaStream_t stream);

}  // namespace strata::cuda
