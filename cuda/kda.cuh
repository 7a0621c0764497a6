// Kimi Delta Attention decode on the GPU (lib/model/kimi_linear.md): the causal conv step of one
// token with its rolling window, and the per-head gated delta-rule step (L2 norms, decay per key
// channel, delta update, read, RMS norm and sigmoid gate) with the dk x dk state resident on the
// device. One block per head, one thread per value channel: each thread owns one column of its
// head's state, so the state is read and written once per token, coalesced.
//
// UNTESTED ON A GPU so far (no device was available when these were written); cuda/tests/
// test_kda.cu checks them against the host recurrence (lib/exec/kda_recurrence.hpp) wherever a
// GPU exists.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace strata::cuda {

// x [D] (in place: pre-conv in, silu(conv) out), w [D][K] (taps innermost), window [D][K-1].
cudaError_t kda_conv_silu_step(float* x, const float* w, float* window, int D, int K, cudaStream_t stream);

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

}  // namespace strata::cuda
