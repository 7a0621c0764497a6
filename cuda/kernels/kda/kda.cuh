// Kimi Delta Attention decode on the GPU (lib/model/kimi_linear.md): the causal conv step of one
// token with its rolling window, and the per-head gated delta-rule step (L2 norms, decay per key
// channel, delta update, read, RMS norm and sigmoid gate) with the dk x dk state resident on the
// device. One block per head, one thread per value channel: each thread owns one column of its
// head's state, so the state is read and written once per token, coalesced.
//
// UNTESTED ON A GPU so far (no device was available when these were written); cuda/tests/
// test_kda.cu checks them against the host recurrence (lib/exec/kda/kda_recurrence.hpp) wherever a
// GPU exists.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace strata::cuda {

// x [D] (in place: pre-conv in, silu(conv) out), w [D][K] (taps innermost), window [D][K-1].
cudaError_t kda_conv_silu_step(float* x, const float* w, float* window, int D, int K, cudaStream_t stream);

// The same over n_tokens tokens in order (x: [n_tokens][D], in place), the window advanced past
// all of them: one thread per channel walks the tokens.
cudaError_t kda_conv_silu(float* x, int n_tokens, int D, const float* w, int K, float* window, cudaStream_t stream);

struct KdaStepShape {
    int n_head;              // H
    int head_dim;            // dk (= dv): 32..1024, a multiple of 32
    float eps;               // L2 and RMS norm epsilon
    int lower_bound_gate;    // 1: g = lb * sigmoid(-a z) (K3); 0: g = a * softplus(z)
    float gate_lower_bound;
};

// Per head h (channels h*dk ..): q, k, v post-conv [D]; z the decay pre-activation [D] (dt_bias
// added here); ssm_a [H] (-exp(A_log)); beta_logit [H]; gate [D] (output gate pre-sigmoid);
// ssm_norm [dk]; state [H][dk][dk] (row = key channel) updated in place; y [D] out.
cudaError_t kda_decode_step(const float* q, const float* k, const float* v, const float* z, const float* dt_bias,
                            const float* ssm_a, const float* beta_logit, const float* gate, const float* ssm_norm,
                            float* state, float* y, const KdaStepShape& s, cudaStream_t stream);

// The step form over n_tokens tokens in order in one launch (the prefill of the step form, and
// what decode after prefill must reproduce): q, k, v, z, gate, y [n_tokens][D]; beta_logit
// [n_tokens][H]; each block keeps its head's state on the device across the tokens. Token t's
// arithmetic is exactly kda_decode_step's.
cudaError_t kda_step_tokens(const float* q, const float* k, const float* v, const float* z, const float* dt_bias,
                            const float* ssm_a, const float* beta_logit, const float* gate, const float* ssm_norm,
                            float* state, float* y, int n_tokens, const KdaStepShape& s, cudaStream_t stream);

// Before the chunked form (kda_chunk.cuh) over n_tokens tokens: q and k L2-normalized per head in
// place (q also times 1/sqrt(dk)); g [n_tokens][D] = the log decay from z + dt_bias (the gate
// form of s); beta [n_tokens][H] = sigmoid(beta_logit). The same per-token arithmetic as
// kda_decode_step's.
cudaError_t kda_prepare(float* q, float* k, const float* z, const float* dt_bias, const float* ssm_a,
                        const float* beta_logit, int n_tokens, const KdaStepShape& s, float* g, float* beta,
                        cudaStream_t stream);

// After it: y = rms_norm(o per head, ssm_norm) * sigmoid(gate), o, gate, y [n_tokens][D] (y may
// be o).
cudaError_t kda_gate_output(const float* o, const float* gate, const float* ssm_norm, int n_tokens,
                            const KdaStepShape& s, float* y, cudaStream_t stream);

}  // namespace strata::cuda
