// The deepseek2 / kimi forward pass's element-wise and data-movement ops (model_ops.cuh).
// Row reductions run one block per row and sum in double like lib/exec (exec::rms_norm,
// Context::attn_res_mix); only their summation order differs. Products and sums that the CPU
// rounds one at a time are rounded one at a time here (__fmul_rn / __fadd_rn: lib/exec is built
// with -ffp-contract=off), so the copies and the MoE combine are bit-exact, and the rest differ
// from the CPU only by expf/tanhf against the host's libm and by a rare one-ulp flip of a float
// scale. Deterministic (no atomics); launch only; grid sizes never depend on device data.
//
// UNTESTED ON A GPU until cuda/tests/test_model_ops.cu has run on one.
#include "model_ops.cuh"
#include "warp_reduce.cuh"

#include <cmath>

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// attn_res_mix keeps a token's n_bank + 1 scores in shared memory; K3 banks about a dozen.
constexpr int kMaxResEntries = 64;

// Blocks for n elements at kThreads per block, capped (grid-stride kernels loop over the rest).
unsigned blocks_for(uint64_t n, unsigned cap = 65536u) { return grid_blocks(n, kThreads, cap); }

// Block-wide sums of every thread's a and b, the same values in every thread (each adds the
// warp partials in the same order). Every thread of the block must call it; it ends with a
// barrier so the caller may call it again at once.
__device__ void block_sum2(double& a, double& b) {
    __shared__ double partial[2][kWarps];
    a = warp_sum(a);
    b = warp_sum(b);
    if (threadIdx.x % 32 == 0) {
        partial[0][threadIdx.x / 32] = a;
        partial[1][threadIdx.x / 32] = b;
    }
    __syncthreads();
    a = 0.0;
    b = 0.0;
    for (int w = 0; w < kWarps; ++w) {
        a += partial[0][w];
        b += partial[1][w];
    }
    __syncthreads();
}

__device__ __forceinline__ float quiet_nan() { return __int_as_float(0x7fc00000); }

// 1 / (1 + exp(-g)) as lib/exec writes it.
__device__ __forceinline__ float sigmoid(float g) { return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-g))); }

// ---- norms ----------------------------------------------------------------------------------

// One block per row. Each thread reads and writes only its own elements, in two passes split
// by the reduction's barriers, so out may be x (same stride).
__global__ void rms_norm_strided_kernel(const float* x, int64_t x_stride, const float* w, int64_t n, double eps,
                                        float* out, int64_t out_stride) {
    const float* xr = x + int64_t(blockIdx.x) * x_stride;
    float* o = out + int64_t(blockIdx.x) * out_stride;
    double ss = 0.0, unused = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += kThreads) ss += double(xr[i]) * double(xr[i]);
    block_sum2(ss, unused);
    const float scale = float(1.0 / sqrt(ss / double(n) + eps));  // exec::rms_norm's scale
    for (int64_t i = threadIdx.x; i < n; i += kThreads) o[i] = __fmul_rn(__fmul_rn(xr[i], scale), w[i]);
}

// exec::softmax on a few scores, by one thread.
__device__ void softmax_one_thread(float* s, int n) {
    float mx = s[0];
    for (int i = 1; i < n; ++i) mx = s[i] > mx ? s[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; ++i) {
        s[i] = expf(__fsub_rn(s[i], mx));
        sum += s[i];
    }
    const float inv = float(1.0 / sum);
    for (int i = 0; i < n; ++i) s[i] = __fmul_rn(s[i], inv);
}

// One block per token: a block reduction per entry for its score, a softmax by thread 0, then
// the mix in the CPU's order (x's term first, then the bank's in order).
__global__ void attn_res_mix_kernel(const float* __restrict__ x, const float* __restrict__ bank, int n_bank,
                                    int64_t bank_stride, const float* __restrict__ w, int64_t E, double eps,
                                    float* __restrict__ out) {
    __shared__ float score[kMaxResEntries];
    const int64_t t = blockIdx.x;
    const float* xt = x + t * E;
    const float* bt = n_bank > 0 ? bank + t * bank_stride : nullptr;
    for (int j = 0; j <= n_bank; ++j) {  // uniform across the block: the barriers inside are safe
        const float* e = j < n_bank ? bt + int64_t(j) * E : xt;
        double ss = 0.0, dot = 0.0;
        for (int64_t c = threadIdx.x; c < E; c += kThreads) {
            const double v = e[c];
            ss += v * v;
            dot += v * double(w[c]);
        }
        block_sum2(ss, dot);
        if (threadIdx.x == 0) score[j] = float(dot / sqrt(ss / double(E) + eps));
    }
    if (threadIdx.x == 0) softmax_one_thread(score, n_bank + 1);
    __syncthreads();
    float* o = out + t * E;
    for (int64_t c = threadIdx.x; c < E; c += kThreads) {
        float acc = __fmul_rn(score[n_bank], xt[c]);
        for (int j = 0; j < n_bank; ++j) acc = __fadd_rn(acc, __fmul_rn(score[j], bt[int64_t(j) * E + c]));
        o[c] = acc;
    }
}

// ---- element-wise -----------------------------------------------------------------------------

__global__ void swiglu_kernel(float* gate, const float* up, size_t n) {
    const size_t stride = size_t(gridDim.x) * kThreads;
    for (size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
        const float g = gate[i];
        gate[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), up[i]);  // exec::swiglu
    }
}

__global__ void situ_kernel(float* gate, const float* up, size_t n, float b, float l) {
    const size_t stride = size_t(gridDim.x) * kThreads;
    for (size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
        const float g = gate[i];
        const float u = l > 0.0f ? __fmul_rn(l, tanhf(__fdiv_rn(up[i], l))) : up[i];
        // Context::activate: b * tanh(g / b) / (1 + exp(-g)) * u, left to right.
        gate[i] = __fmul_rn(__fdiv_rn(__fmul_rn(b, tanhf(__fdiv_rn(g, b))), __fadd_rn(1.0f, expf(-g))), u);
    }
}

__global__ void mul_sigmoid_kernel(float* x, const float* g, size_t n) {
    const size_t stride = size_t(gridDim.x) * kThreads;
    for (size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) x[i] = __fmul_rn(x[i], sigmoid(g[i]));
}

// ---- data movement ------------------------------------------------------------------------------

// One thread per destination value (consecutive threads: consecutive i, coalesced both sides).
__global__ void gather_heads_kernel(const float* __restrict__ src, uint64_t n_tokens, int64_t token_stride,
                                    int64_t head_stride, int64_t offset, uint64_t width, uint64_t total,
                                    float* __restrict__ dst) {
    const uint64_t stride = uint64_t(gridDim.x) * kThreads;
    for (uint64_t u = uint64_t(blockIdx.x) * kThreads + threadIdx.x; u < total; u += stride) {
        const uint64_t i = u % width, row = u / width;  // row = h * n_tokens + t
        const int64_t t = int64_t(row % n_tokens), h = int64_t(row / n_tokens);
        dst[u] = src[t * token_stride + h * head_stride + offset + int64_t(i)];
    }
}

__global__ void scatter_heads_kernel(const float* __restrict__ src, uint64_t n_tokens, uint64_t n_heads,
                                     uint64_t width, uint64_t total, float* __restrict__ dst) {
    const uint64_t stride = uint64_t(gridDim.x) * kThreads;
    for (uint64_t u = uint64_t(blockIdx.x) * kThreads + threadIdx.x; u < total; u += stride) {
        const uint64_t i = u % width, row = u / width;  // row = t * n_heads + h
        const uint64_t h = row % n_heads, t = row / n_heads;
        dst[u] = src[(h * n_tokens + t) * width + i];
    }
}

// One block per destination row. A negative index gives a row of NaN rather than a wild read
// (the indices come from device code; the source's row count is not known here).
__global__ void gather_rows_kernel(const float* __restrict__ src, const int32_t* __restrict__ rows, int64_t width,
                                   float* __restrict__ dst) {
    const int32_t r = rows[blockIdx.x];
    float* d = dst + int64_t(blockIdx.x) * width;
    const float* s = src + int64_t(r < 0 ? 0 : r) * width;
    for (int64_t c = threadIdx.x; c < width; c += kThreads) d[c] = r < 0 ? quiet_nan() : s[c];
}

// One block per token; each value summed over the token's k slots in slot order from 0, every
// product and sum rounded as the CPU's loop rounds them. A negative row contributes NaN.
__global__ void moe_combine_kernel(const float* __restrict__ src, const int32_t* __restrict__ rows,
                                   const float* __restrict__ weights, int k, int64_t width, float* __restrict__ out) {
    const int64_t t = blockIdx.x;
    const int32_t* tr = rows + t * k;
    const float* tw = weights + t * k;
    float* o = out + t * width;
    for (int64_t c = threadIdx.x; c < width; c += kThreads) {
        float acc = 0.0f;
        for (int i = 0; i < k; ++i) {
            const int32_t r = tr[i];
            const float v = r < 0 ? quiet_nan() : src[int64_t(r) * width + c];
            acc = __fadd_rn(acc, __fmul_rn(tw[i], v));
        }
        o[c] = acc;
    }
}

// Whether [a, a + a_len) and [b, b + b_len) share a float (lengths in floats).
bool overlaps(const float* a, uint64_t a_len, const float* b, uint64_t b_len) {
    const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
    return pa < pb + b_len * sizeof(float) && pb < pa + a_len * sizeof(float);
}

}  // namespace

cudaError_t rms_norm_strided(const float* x, int64_t x_stride, const float* w, int64_t n, int n_rows, float eps,
                             float* out, int64_t out_stride, cudaStream_t stream) {
    if (n < 0 || n_rows < 0) return cudaErrorInvalidValue;
    if (n == 0 || n_rows == 0) return cudaSuccess;
    if (!x || !w || !out || x_stride < n || out_stride < n) return cudaErrorInvalidValue;
    if (out == x && out_stride != x_stride) return cudaErrorInvalidValue;  // rows would race
    rms_norm_strided_kernel<<<unsigned(n_rows), kThreads, 0, stream>>>(x, x_stride, w, n, double(eps), out,
                                                                       out_stride);
    return cudaGetLastError();
}

cudaError_t ffn_activate(float* gate, const float* up, size_t n, float situ_beta, float situ_linear_beta,
                         cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (!gate || !up || std::isnan(situ_beta) || std::isnan(situ_linear_beta)) return cudaErrorInvalidValue;
    if (situ_beta <= 0.0f)
        swiglu_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, n);
    else
        situ_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, n, situ_beta, situ_linear_beta);
    return cudaGetLastError();
}

cudaError_t mul_sigmoid(float* x, const float* g, size_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (!x || !g) return cudaErrorInvalidValue;
    mul_sigmoid_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, g, n);
    return cudaGetLastError();
}

cudaError_t gather_heads(const float* src, int n_tokens, int n_heads, int64_t token_stride, int64_t head_stride,
                         int64_t offset, int64_t width, float* dst, cudaStream_t stream) {
    if (n_tokens < 0 || n_heads < 0 || width < 0) return cudaErrorInvalidValue;
    if (n_tokens == 0 || n_heads == 0 || width == 0) return cudaSuccess;
    // Strides may be 0 (one shared head broadcast to all, as MLA's rope key is).
    if (!src || !dst || token_stride < 0 || head_stride < 0 || offset < 0) return cudaErrorInvalidValue;
    const uint64_t total = uint64_t(n_tokens) * uint64_t(n_heads) * uint64_t(width);
    gather_heads_kernel<<<blocks_for(total), kThreads, 0, stream>>>(src, uint64_t(n_tokens), token_stride, head_stride,
                                                                    offset, uint64_t(width), total, dst);
    return cudaGetLastError();
}

cudaError_t scatter_heads(const float* src, int n_tokens, int n_heads, int64_t width, float* dst, cudaStream_t stream) {
    if (n_tokens < 0 || n_heads < 0 || width < 0) return cudaErrorInvalidValue;
    if (n_tokens == 0 || n_heads == 0 || width == 0) return cudaSuccess;
    if (!src || !dst) return cudaErrorInvalidValue;
    const uint64_t total = uint64_t(n_tokens) * uint64_t(n_heads) * uint64_t(width);
    scatter_heads_kernel<<<blocks_for(total), kThreads, 0, stream>>>(src, uint64_t(n_tokens), uint64_t(n_heads),
                                                                     uint64_t(width), total, dst);
    return cudaGetLastError();
}

cudaError_t attn_res_mix(const float* x, const float* bank, int n_bank, int64_t bank_stride, const float* w,
                         int n_tokens, int64_t E, float eps, float* out, cudaStream_t stream) {
    if (n_tokens < 0 || E < 0 || n_bank < 0 || n_bank + 1 > kMaxResEntries) return cudaErrorInvalidValue;
    if (n_tokens == 0 || E == 0) return cudaSuccess;
    if (!x || !w || !out) return cudaErrorInvalidValue;
    const uint64_t rows_len = uint64_t(n_tokens) * uint64_t(E);
    if (overlaps(out, rows_len, x, rows_len)) return cudaErrorInvalidValue;
    if (n_bank > 0) {
        if (!bank || bank_stride < int64_t(n_bank) * E) return cudaErrorInvalidValue;
        const uint64_t bank_len = uint64_t(n_tokens - 1) * uint64_t(bank_stride) + uint64_t(n_bank) * uint64_t(E);
        if (overlaps(out, rows_len, bank, bank_len)) return cudaErrorInvalidValue;
    }
    attn_res_mix_kernel<<<unsigned(n_tokens), kThreads, 0, stream>>>(x, bank, n_bank, bank_stride, w, E, double(eps),
                                                                     out);
    return cudaGetLastError();
}

cudaError_t gather_rows(const float* src, const int32_t* rows, int n_rows, int64_t width, float* dst,
                        cudaStream_t stream) {
    if (n_rows < 0 || width < 0) return cudaErrorInvalidValue;
    if (n_rows == 0 || width == 0) return cudaSuccess;
    if (!src || !rows || !dst) return cudaErrorInvalidValue;
    gather_rows_kernel<<<unsigned(n_rows), kThreads, 0, stream>>>(src, rows, width, dst);
    return cudaGetLastError();
}

cudaError_t moe_combine(const float* src, const int32_t* rows, const float* weights, int n_tokens, int k,
                        int64_t width, float* out, cudaStream_t stream) {
    if (n_tokens < 0 || k < 0 || width < 0) return cudaErrorInvalidValue;
    if (n_tokens == 0 || width == 0) return cudaSuccess;
    // k == 0 still launches: the sum over no slots is 0, as the CPU's zeroed output is.
    if (!out || (k > 0 && (!src || !rows || !weights))) return cudaErrorInvalidValue;
    moe_combine_kernel<<<unsigned(n_tokens), kThreads, 0, stream>>>(src, rows, weights, k, width, out);
    return cudaGetLastError();
}

}  // namespace strata::cuda
