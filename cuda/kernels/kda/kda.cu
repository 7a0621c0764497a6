// The KDA kernels of kda.cuh. The causal conv: one thread per channel walking the tokens. The step
// form: one block per head, one thread per value channel, which owns that column of the head's
// state (coalesced across the block). Around the chunked form: one block per (token, head). The
// step kernel and the prepare/output kernels share the per-token arithmetic below, so the chunked
// path differs from the step path only in the recurrence.
//
// UNTESTED ON A GPU so far (none was available when these were written): cuda/tests/test_kda.cu
// checks them against the host recurrence and against each other wherever a GPU exists.
#include "kda.cuh"

#include <climits>
#include <cstdint>

namespace strata::cuda {
namespace {

constexpr int kConvThreads = 64;  // few channels (a few thousand): small blocks spread them over more SMs
constexpr int kConvBatch = 8;     // tokens whose inputs are loaded before any is computed (hides latency)

// x [n_tokens][D] in place; the window of channel c is window[c][0 .. K-2], oldest first. No
// barriers: threads past D leave at once.
__global__ void conv_silu_kernel(float* x, int n_tokens, int D, const float* w, int K, float* window) {
    const int c = int(blockIdx.x) * blockDim.x + int(threadIdx.x);
    if (c >= D) return;
    const int taps = K - 1;
    float* win = window + size_t(c) * taps;
    const float* wc = w + size_t(c) * K;
    for (int t0 = 0; t0 < n_tokens; t0 += kConvBatch) {
        // The loads of a batch are all in flight together; the window is a separate buffer, so
        // reading ahead cannot see a stale value.
        float in[kConvBatch];
#pragma unroll
        for (int b = 0; b < kConvBatch; ++b) in[b] = t0 + b < n_tokens ? x[size_t(t0 + b) * D + c] : 0.0f;
#pragma unroll
        for (int b = 0; b < kConvBatch; ++b) {
            if (t0 + b >= n_tokens) break;
            const float cur = in[b];
            float acc = wc[taps] * cur;  // tap K-1 multiplies the current token
            for (int j = 0; j < taps; ++j) acc += wc[j] * win[j];
            for (int j = 0; j + 1 < taps; ++j) win[j] = win[j + 1];
            if (taps > 0) win[taps - 1] = cur;
            x[size_t(t0 + b) * D + c] = acc / (1.0f + expf(-acc));
        }
    }
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024). Every thread of the block must
// call it (it holds barriers); shared[32] is free again when it returns.
__device__ float block_sum(float v, float* shared) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {  // only warp 0 reads the partial sums: no other warp's read races its write of shared[0]
        const int n_warps = int(blockDim.x) / 32;
        v = lane < n_warps ? shared[lane] : 0.0f;
        for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    const float r = shared[0];
    __syncthreads();
    return r;
}

// The per-token arithmetic both forms share; thread j of a head's block (blockDim.x = dk) holds
// channel j. Each function with a block sum must be called by the whole block.

__device__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// L2 norm, eps-floored, and q's 1/sqrt(dk).
struct NormedQk {
    float q, k;
};
__device__ NormedQk normed_qk(float qj, float kj, int dk, float eps, float* red) {
    const float qn = block_sum(qj * qj, red), kn = block_sum(kj * kj, red);
    return {qj / fmaxf(sqrtf(qn), eps) * rsqrtf(float(dk)), kj / fmaxf(sqrtf(kn), eps)};
}

// The log decay (<= 0 for a = ssm_a < 0) of one key channel from zj = z + dt_bias.
__device__ float log_decay(float a, float zj, const KdaStepShape& s) {
    return s.lower_bound_gate ? s.gate_lower_bound / (1.0f + expf(a * zj))  // lb * sigmoid(-a z)
                              : a * (zj > 20.0f ? zj : log1pf(expf(zj)));   // a * softplus(z)
}

// rms_norm(o over the head) * ssm_norm[j] * sigmoid(gate[j]).
__device__ float gated_output(float o, float gate_j, float norm_j, int dk, float eps, float* red) {
    const float ms = block_sum(o * o, red) / float(dk);
    return o * rsqrtf(ms + eps) * norm_j / (1.0f + expf(-gate_j));
}

// Tokens in order; rows of D = H * dk floats (beta_logit: rows of H). The state column j of head h
// (S[h][i][j], i = 0..dk-1) is read and written by thread j only, so it needs no barrier between
// tokens; the shared q, k and decay of a token do (see the end of the loop).
__global__ void __launch_bounds__(1024)
    kda_step_kernel(const float* q, const float* k, const float* v, const float* z, const float* dt_bias,
                    const float* ssm_a, const float* beta_logit, const float* gate, const float* ssm_norm,
                    float* state, float* y, int n_tokens, KdaStepShape s) {
    extern __shared__ float sh[];  // q[dk], k[dk], alpha[dk] of the current token
    __shared__ float red[32];
    const int h = int(blockIdx.x), dk = s.head_dim, j = int(threadIdx.x);
    const size_t D = size_t(s.n_head) * size_t(dk), col = size_t(h) * size_t(dk) + size_t(j);
    float* qs = sh;
    float* ks = sh + dk;
    float* alpha = sh + 2 * dk;
    const float a = ssm_a[h], bias = dt_bias[col], norm_j = ssm_norm[j];
    float* S = state + size_t(h) * size_t(dk) * size_t(dk);  // S[i * dk + j]: this thread's column j
    for (int t = 0; t < n_tokens; ++t) {
        const size_t at = size_t(t) * D + col;
        const NormedQk n = normed_qk(q[at], k[at], dk, s.eps, red);
        qs[j] = n.q;
        ks[j] = n.k;
        alpha[j] = expf(log_decay(a, z[at] + bias, s));  // thread j computes key channel j's decay
        __syncthreads();
        const float beta = sigmoid(beta_logit[size_t(t) * size_t(s.n_head) + size_t(h)]);
        float pred = 0.0f;
        for (int i = 0; i < dk; ++i) pred += alpha[i] * S[size_t(i) * dk + j] * ks[i];
        const float u = beta * (v[at] - pred);
        float o = 0.0f;
        for (int i = 0; i < dk; ++i) {
            const float sij = alpha[i] * S[size_t(i) * dk + j] + ks[i] * u;
            S[size_t(i) * dk + j] = sij;
            o += sij * qs[i];
        }
        y[at] = gated_output(o, gate[at], norm_j, dk, s.eps, red);
        __syncthreads();  // every thread is done with qs, ks, alpha before the next token rewrites them
    }
}

// Block b = t * H + h (blockDim.x = dk): q, k normalized in place, g and beta of (t, h).
__global__ void __launch_bounds__(1024)
    kda_prepare_kernel(float* q, float* k, const float* z, const float* dt_bias, const float* ssm_a,
                       const float* beta_logit, KdaStepShape s, float* g, float* beta) {
    __shared__ float red[32];
    const int dk = s.head_dim, j = int(threadIdx.x), h = int(blockIdx.x) % s.n_head;
    const size_t row = blockIdx.x, at = row * size_t(dk) + size_t(j);  // [t][h] rows of dk
    const NormedQk n = normed_qk(q[at], k[at], dk, s.eps, red);
    q[at] = n.q;
    k[at] = n.k;
    g[at] = log_decay(ssm_a[h], z[at] + dt_bias[size_t(h) * size_t(dk) + size_t(j)], s);
    if (j == 0) beta[row] = sigmoid(beta_logit[row]);
}

// Block b = t * H + h: y of (t, h). Each thread reads its o before the block sum and writes its y
// after it, so y may be o.
__global__ void __launch_bounds__(1024)
    kda_gate_output_kernel(const float* o, const float* gate, const float* ssm_norm, KdaStepShape s, float* y) {
    __shared__ float red[32];
    const int dk = s.head_dim, j = int(threadIdx.x);
    const size_t at = size_t(blockIdx.x) * size_t(dk) + size_t(j);
    y[at] = gated_output(o[at], gate[at], ssm_norm[j], dk, s.eps, red);
}

bool valid_shape(const KdaStepShape& s) {
    return s.n_head > 0 && s.head_dim >= 32 && s.head_dim <= 1024 && s.head_dim % 32 == 0;
}

// One block per (token, head) fits the grid's x limit.
bool fits_token_grid(int n_tokens, const KdaStepShape& s) { return int64_t(n_tokens) * s.n_head <= INT_MAX; }

}  // namespace

cudaError_t kda_conv_silu(float* x, int n_tokens, int D, const float* w, int K, float* window, cudaStream_t stream) {
    if (!x || !w || !window || n_tokens < 0 || D <= 0 || K < 1) return cudaErrorInvalidValue;
    if (n_tokens == 0) return cudaSuccess;
    conv_silu_kernel<<<(D + kConvThreads - 1) / kConvThreads, kConvThreads, 0, stream>>>(x, n_tokens, D, w, K, window);
    return cudaGetLastError();
}

cudaError_t kda_conv_silu_step(float* x, const float* w, float* window, int D, int K, cudaStream_t stream) {
    return kda_conv_silu(x, 1, D, w, K, window, stream);
}

cudaError_t kda_step_tokens(const float* q, const float* k, const float* v, const float* z, const float* dt_bias,
                            const float* ssm_a, const float* beta_logit, const float* gate, const float* ssm_norm,
                            float* state, float* y, int n_tokens, const KdaStepShape& s, cudaStream_t stream) {
    if (!q || !k || !v || !z || !dt_bias || !ssm_a || !beta_logit || !gate || !ssm_norm || !state || !y ||
        n_tokens < 0 || !valid_shape(s))
        return cudaErrorInvalidValue;
    if (n_tokens == 0) return cudaSuccess;
    const size_t shared = size_t(3 * s.head_dim) * sizeof(float);
    kda_step_kernel<<<unsigned(s.n_head), unsigned(s.head_dim), shared, stream>>>(
        q, k, v, z, dt_bias, ssm_a, beta_logit, gate, ssm_norm, state, y, n_tokens, s);
    return cudaGetLastError();
}

// The same kernel with one token, so that decode reproduces the step form's prefill bit for bit.
cudaError_t kda_decode_step(const float* q, const float* k, const float* v, const float* z, const float* dt_bias,
                            const float* ssm_a, const float* beta_logit, const float* gate, const float* ssm_norm,
                            float* state, float* y, const KdaStepShape& s, cudaStream_t stream) {
    return kda_step_tokens(q, k, v, z, dt_bias, ssm_a, beta_logit, gate, ssm_norm, state, y, 1, s, stream);
}

cudaError_t kda_prepare(float* q, float* k, const float* z, const float* dt_bias, const float* ssm_a,
                        const float* beta_logit, int n_tokens, const KdaStepShape& s, float* g, float* beta,
                        cudaStream_t stream) {
    if (!q || !k || !z || !dt_bias || !ssm_a || !beta_logit || !g || !beta || n_tokens < 0 || !valid_shape(s) ||
        !fits_token_grid(n_tokens, s))
        return cudaErrorInvalidValue;
    if (n_tokens == 0) return cudaSuccess;
    kda_prepare_kernel<<<unsigned(n_tokens * s.n_head), unsigned(s.head_dim), 0, stream>>>(q, k, z, dt_bias, ssm_a,
                                                                                        beta_logit, s, g, beta);
    return cudaGetLastError();
}

cudaError_t kda_gate_output(const float* o, const float* gate, const float* ssm_norm, int n_tokens,
                            const KdaStepShape& s, float* y, cudaStream_t stream) {
    if (!o || !gate || !ssm_norm || !y || n_tokens < 0 || !valid_shape(s) || !fits_token_grid(n_tokens, s))
        return cudaErrorInvalidValue;
    if (n_tokens == 0) return cudaSuccess;
    kda_gate_output_kernel<<<unsigned(n_tokens * s.n_head), unsigned(s.head_dim), 0, stream>>>(o, gate, ssm_norm, s,
                                                                                            y);
    return cudaGetLastError();
}

}  // namespace strata::cuda
