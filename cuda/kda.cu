#include "kda.cuh"

namespace strata::cuda {
namespace {

__global__ void conv_step_kernel(float* x, const float* w, float* window, int D, int K) {
    const int c = int(blockIdx.x) * blockDim.x + int(threadIdx.x);
    if (c >= D) return;
    const int taps = K - 1;
    float* win = window + size_t(c) * taps;
    const float* wc = w + size_t(c) * K;
    const float cur = x[c];
    float acc = wc[taps] * cur;
    for (int j = 0; j < taps; ++j) acc += wc[j] * win[j];
    for (int j = 0; j + 1 < taps; ++j) win[j] = win[j + 1];
    if (taps > 0) win[taps - 1] = cur;
    x[c] = acc / (1.0f + expf(-acc));
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024).
__device__ float block_sum(float v, float* shared) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    const int n_warps = int(blockDim.x) / 32;
    v = lane < n_warps ? shared[lane] : 0.0f;
    if (warp == 0)
        for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    const float r = shared[0];
    __syncthreads();
    return r;
}

__global__ void kda_step_kernel(const float* q, const float* k, const float* v, const float* z, const float* dt_bias,
                                const float* ssm_a, const float* beta_logit, const float* gate, const float* ssm_norm,
                                float* state, float* y, KdaStepShape s) {
    extern __shared__ float sh[];  // q[dk], k[dk], alpha[dk]
    __shared__ float red[32];
    const int h = int(blockIdx.x), dk = s.head_dim, j = int(threadIdx.x);
    const size_t base = size_t(h) * dk;
    float* qs = sh;
    float* ks = sh + dk;
    float* alpha = sh + 2 * dk;
    const float qj = q[base + j], kj = k[base + j];
    const float qn = block_sum(qj * qj, red), kn = block_sum(kj * kj, red);
    const float scale = rsqrtf(float(dk));
    qs[j] = qj / fmaxf(sqrtf(qn), s.eps) * scale;
    ks[j] = kj / fmaxf(sqrtf(kn), s.eps);
    const float a = ssm_a[h], zj = z[base + j] + dt_bias[base + j];
    const float g = s.lower_bound_gate ? s.gate_lower_bound / (1.0f + expf(a * zj))  // lb * sigmoid(-a z)
                                       : a * (zj > 20.0f ? zj : log1pf(expf(zj)));
    alpha[j] = expf(g);  // thread j computes key channel j's decay
    __syncthreads();
    const float beta = 1.0f / (1.0f + expf(-beta_logit[h]));
    float* S = state + size_t(h) * dk * dk;  // S[i * dk + j]: this thread's column j
    float pred = 0.0f;
    for (int i = 0; i < dk; ++i) pred += alpha[i] * S[size_t(i) * dk + j] * ks[i];
    const float u = beta * (v[base + j] - pred);
    float o = 0.0f;
    for (int i = 0; i < dk; ++i) {
        const float sij = alpha[i] * S[size_t(i) * dk + j] + ks[i] * u;
        S[size_t(i) * dk + j] = sij;
        o += sij * qs[i];
    }
    const float ms = block_sum(o * o, red) / float(dk);
    const float gj = gate[base + j];
    y[base + j] = o * rsqrtf(ms + s.eps) * ssm_norm[j] / (1.0f + expf(-gj));
}

}  // namespace

cudaError_t kda_conv_silu_step(float* x, const float* w, float* window, int D, int K, cudaStream_t stream) {
    if (!x || !w || !window || D <= 0 || K < 1) return cudaErrorInvalidValue;
    const int threads = 256;
    conv_step_kernel<<<(D + threads - 1) / threads, threads, 0, stream>>>(x, w, window, D, K);
    return cudaGetLastError();
}

cudaError_t kda_decode_step(const float* q, const float* k, const float* v, const float* z, const float* dt_bias,
                            const float* ssm_a, const float* beta_logit, const float* gate, const float* ssm_norm,
                            float* state, float* y, const KdaStepShape& s, cudaStream_t stream) {
    if (!q || !k || !v || !z || !dt_bias || !ssm_a || !beta_logit || !gate || !ssm_norm || !state || !y ||
        s.n_head <= 0 || s.head_dim < 32 || s.head_dim > 1024 || s.head_dim % 32 != 0)
        return cudaErrorInvalidValue;
    const size_t shared = size_t(3 * s.head_dim) * sizeof(float);
    kda_step_kernel<<<unsigned(s.n_head), unsigned(s.head_dim), shared, stream>>>(q, k, v, z, dt_bias, ssm_a, beta_logit,
                                                                               gate, ssm_norm, state, y, s);
    return cudaGetLastError();
}

}  // namespace strata::cuda
