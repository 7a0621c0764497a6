// The llama-family element-wise ops (ops.cuh). Each kernel does the CPU's arithmetic in the same
// order where that is cheap (RoPE and the row scalings use explicitly rounded multiplies, so no
// FMA contraction separates them from lib/exec, which is built with -ffp-contract=off); the RMS
// sums of squares run in double like exec::rms_norm, only their summation order differs.
// Launch-only: no allocation, no synchronization; grid sizes never depend on device data.
// (get_rows, the embedding rows of every weight type, lives with the other decoders in dequant.cu.)
//
// UNTESTED ON A GPU until cuda/tests/test_ops.cu has run on one.
#include "ops.cuh"

#include <cuda_fp16.h>

#include "warp_reduce.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kMaxGrid = 0x7fffffffu;

// Blocks for n elements at kThreads per block, capped (the kernels loop over the rest).
unsigned blocks_for(uint64_t n, unsigned cap = 65536u) { return grid_blocks(n, kThreads, cap); }

// ---- RMSNorm ------------------------------------------------------------------------------

// One block per row. Every thread reads and writes the same elements in both passes, so out may
// alias x (the block-wide reduction separates the passes).
__global__ void rms_norm_kernel(const float* x, const float* w, int64_t n, double eps, float* out) {
    __shared__ double partial[kWarps];
    const size_t row = size_t(blockIdx.x) * size_t(n);
    const float* xr = x + row;
    double ss = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += kThreads) ss += double(xr[i]) * double(xr[i]);
    ss = warp_sum(ss);
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    if (lane == 0) partial[warp] = ss;
    __syncthreads();
    double total = 0.0;
    for (int k = 0; k < kWarps; ++k) total += partial[k];  // every thread: the same value
    // Exactly exec::rms_norm's scale: the square of a float is exact in double, so only the
    // summation order differs (a few ulp of a double), almost never moving the float rounding.
    const float scale = float(1.0 / sqrt(total / double(n) + eps));
    float* o = out + row;
    for (int64_t i = threadIdx.x; i < n; i += kThreads) o[i] = __fmul_rn(__fmul_rn(xr[i], scale), w[i]);
}

// One warp per (token, head): qwen3's per-head q/k norm, in place.
__global__ void head_rms_norm_kernel(float* x, const float* w, int n_tokens, int n_heads, int head_dim,
                                     int64_t token_stride, double eps) {
    const int64_t unit = int64_t(blockIdx.x) * kWarps + int(threadIdx.x) / 32;
    if (unit >= int64_t(n_tokens) * n_heads) return;  // whole warps leave together
    const int lane = int(threadIdx.x) % 32;
    const int64_t t = unit / n_heads, h = unit % n_heads;
    float* head = x + t * token_stride + h * head_dim;
    double ss = 0.0;
    for (int d = lane; d < head_dim; d += 32) ss += double(head[d]) * double(head[d]);
    ss = warp_sum(ss);
    const float scale = float(1.0 / sqrt(ss / double(head_dim) + eps));
    for (int d = lane; d < head_dim; d += 32) head[d] = __fmul_rn(__fmul_rn(head[d], scale), w[d]);
}

// ---- additions ----------------------------------------------------------------------------

__global__ void add_kernel(float* x, const float* y, size_t n) {
    const size_t stride = size_t(gridDim.x) * kThreads;
    for (size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) x[i] = __fadd_rn(x[i], y[i]);
}

__global__ void add_row_bias_kernel(float* x, const float* bias, int64_t width, uint64_t n) {
    const uint64_t stride = uint64_t(gridDim.x) * kThreads;
    for (uint64_t i = uint64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
        x[i] = __fadd_rn(x[i], bias[i % uint64_t(width)]);
}

// ---- RoPE -------------------------------------------------------------------------------------

// One thread per (token, head, pair). The position is read here, on the device, so a captured
// graph rotates correctly at whatever position the sequence has reached when it replays.
__global__ void rope_kernel(float* x, int n_tokens, int n_heads, int head_dim, int64_t token_stride,
                            const float* cos_table, const float* sin_table, int n_pairs, int neox, const int32_t* pos0) {
    const uint64_t total = uint64_t(n_tokens) * uint64_t(n_heads) * uint64_t(n_pairs);
    const uint64_t stride = uint64_t(gridDim.x) * kThreads;
    const int64_t base_pos = *pos0;
    for (uint64_t u = uint64_t(blockIdx.x) * kThreads + threadIdx.x; u < total; u += stride) {
        const int i = int(u % uint64_t(n_pairs));
        const uint64_t th = u / uint64_t(n_pairs);
        const int64_t h = int64_t(th % uint64_t(n_heads)), t = int64_t(th / uint64_t(n_heads));
        const int64_t pos = base_pos + t;
        if (pos < 0) continue;
        const float c = cos_table[pos * n_pairs + i], s = sin_table[pos * n_pairs + i];
        float* head = x + t * token_stride + h * head_dim;
        const int a = neox ? i : 2 * i;
        const int b = neox ? i + n_pairs : 2 * i + 1;
        const float x0 = head[a], x1 = head[b];
        // exec::Rope::apply rounds each product, then the sum: no fused multiply-add here either.
        head[a] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
        head[b] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
    }
}

}  // namespace

cudaError_t rms_norm(const float* x, const float* w, int64_t n, int n_rows, float eps, float* out, cudaStream_t stream) {
    if (n_rows == 0) return cudaSuccess;
    if (!x || !w || !out || n <= 0 || n_rows < 0) return cudaErrorInvalidValue;
    rms_norm_kernel<<<unsigned(n_rows), kThreads, 0, stream>>>(x, w, n, double(eps), out);
    return cudaGetLastError();
}

cudaError_t head_rms_norm(float* x, const float* w, int n_tokens, int n_heads, int head_dim, int64_t token_stride,
                          float eps, cudaStream_t stream) {
    if (n_tokens == 0 || n_heads == 0) return cudaSuccess;
    if (!x || !w || n_tokens < 0 || n_heads < 0 || head_dim <= 0 || token_stride < int64_t(n_heads) * head_dim)
        return cudaErrorInvalidValue;
    const uint64_t units = uint64_t(n_tokens) * uint64_t(n_heads);
    const uint64_t grid = (units + kWarps - 1) / kWarps;
    if (grid > kMaxGrid) return cudaErrorInvalidValue;
    head_rms_norm_kernel<<<unsigned(grid), kThreads, 0, stream>>>(x, w, n_tokens, n_heads, head_dim, token_stride,
                                                                  double(eps));
    return cudaGetLastError();
}

cudaError_t add_inplace(float* x, const float* y, size_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (!x || !y) return cudaErrorInvalidValue;
    add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
    return cudaGetLastError();
}

cudaError_t add_row_bias(float* x, const float* bias, int64_t width, int n_rows, cudaStream_t stream) {
    if (width == 0 || n_rows == 0) return cudaSuccess;
    if (!x || !bias || width < 0 || n_rows < 0) return cudaErrorInvalidValue;
    const uint64_t n = uint64_t(width) * uint64_t(n_rows);
    add_row_bias_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, bias, width, n);
    return cudaGetLastError();
}

cudaError_t rope(float* x, int n_tokens, int n_heads, int head_dim, int64_t token_stride, const float* cos_table,
                 const float* sin_table, int n_pairs, int neox, const int32_t* pos0, cudaStream_t stream) {
    if (n_tokens == 0 || n_heads == 0 || n_pairs == 0) return cudaSuccess;
    if (!x || !cos_table || !sin_table || !pos0 || n_tokens < 0 || n_heads < 0 || n_pairs < 0 || head_dim <= 0 ||
        2 * int64_t(n_pairs) > head_dim || token_stride < int64_t(n_heads) * head_dim)
        return cudaErrorInvalidValue;
    const uint64_t total = uint64_t(n_tokens) * uint64_t(n_heads) * uint64_t(n_pairs);
    rope_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, n_tokens, n_heads, head_dim, token_stride, cos_table,
                                                            sin_table, n_pairs, neox, pos0);
    return cudaGetLastError();
}

}  // namespace strata::cuda
