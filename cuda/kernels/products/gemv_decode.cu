// The decode GEMV of the quantized types that have no fused kernel (gemv.cuh): Q4_0, Q4_1, Q5_0,
// Q5_1, Q2_K, Q3_K, IQ2_XS, IQ2_S, IQ3_S, TQ1_0, TQ2_0, MXFP4, Q1_0. Dequantize-then-dot on the
// device: each weight group of 8 is decoded in registers by the type's decode8 (qtype_decode.cuh,
// bit for bit lib/quant's decoder) and dotted in float32 with the float activations, which are not
// quantized (so this path is exact up to float summation, closer to the true product than the CPU's
// integer dots, and slower than a fused kernel: it does float work per weight).
//
// One warp per row, 8 warps per block; lane i decodes groups i, i + 32, ... (a warp's 32 groups are
// contiguous bytes of the row) and uses each for every token. T is 1, 2, 4 or 8: token counts in
// between run the next larger kernel with the extra tokens masked.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemv.cpp).
#include <cstdint>

#include "gemv.cuh"
#include "gemv_launch.cuh"
#include "runtime/gpu_types.hpp"
#include "qtables_device.cuh"
#include "qtype_decode.cuh"

namespace strata::cuda::gemv_detail {
namespace {

constexpr int kWarps = 8;

template <uint32_t kType, int T>
__global__ void __launch_bounds__(kWarps * 32) decode_gemv_kernel(const uint8_t* w, int64_t rows, int64_t row_bytes,
                                                                  int64_t cols, const float* x, int n_tokens,
                                                                  bool x_vec, float* y) {
    const int64_t r = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
    if (r >= rows) return;  // whole warps
    const int lane = int(threadIdx.x % 32);
    const QTables tab = device_qtables();
    const uint8_t* row = w + r * row_bytes;
    float acc[T];
#pragma unroll
    for (int t = 0; t < T; ++t) acc[t] = 0.0f;
    for (int64_t u = lane; u < cols / 8; u += 32) {
        float v[8];
        decode_row_group<kType>(row, u, tab, v);
#pragma unroll
        for (int t = 0; t < T; ++t) {
            if (t >= n_tokens) break;
            const float* xp = x + int64_t(t) * cols + 8 * u;
            float xv[8];
            if (x_vec) {
                const float4 p = __ldg(reinterpret_cast<const float4*>(xp)), q = __ldg(reinterpret_cast<const float4*>(xp) + 1);
                xv[0] = p.x, xv[1] = p.y, xv[2] = p.z, xv[3] = p.w, xv[4] = q.x, xv[5] = q.y, xv[6] = q.z, xv[7] = q.w;
            } else {
#pragma unroll
                for (int j = 0; j < 8; ++j) xv[j] = __ldg(xp + j);
            }
            float s = acc[t];
#pragma unroll
            for (int j = 0; j < 8; ++j) s = fmaf(v[j], xv[j], s);
            acc[t] = s;
        }
    }
#pragma unroll
    for (int t = 0; t < T; ++t) {
        float s = acc[t];
#pragma unroll
        for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0 && t < n_tokens) y[int64_t(t) * rows + r] = s;
    }
}

template <uint32_t kType>
cudaError_t launch_type(const DeviceMatrix& w, const float* x, int n_tokens, float* y, cudaStream_t stream) {
    const unsigned blocks = unsigned((w.rows + kWarps - 1) / kWarps);
    const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0;  // then every row of x is (cols % 8 == 0)
    const int64_t rb = int64_t(w.row_bytes);
    if (n_tokens == 1)
        decode_gemv_kernel<kType, 1><<<blocks, kWarps * 32, 0, stream>>>(w.data, w.rows, rb, w.cols, x, n_tokens, vec, y);
    else if (n_tokens == 2)
        decode_gemv_kernel<kType, 2><<<blocks, kWarps * 32, 0, stream>>>(w.data, w.rows, rb, w.cols, x, n_tokens, vec, y);
    else if (n_tokens <= 4)
        decode_gemv_kernel<kType, 4><<<blocks, kWarps * 32, 0, stream>>>(w.data, w.rows, rb, w.cols, x, n_tokens, vec, y);
    else
        decode_gemv_kernel<kType, 8><<<blocks, kWarps * 32, 0, stream>>>(w.data, w.rows, rb, w.cols, x, n_tokens, vec, y);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_decode(const DeviceMatrix& w, const float* x, int n_tokens, float* y, cudaStream_t stream) {
    if (reinterpret_cast<uintptr_t>(x) % 4 != 0) return cudaErrorInvalidValue;
    switch (w.type) {
#define STRATA_DECODE_CASE(type) \
    case type: return launch_type<type>(w, x, n_tokens, y, stream);
        STRATA_CUDA_DECODE_GEMV_QTYPES(STRATA_DECODE_CASE)
#undef STRATA_DECODE_CASE
    default: return cudaErrorInvalidValue;
    }
}

}  // namespace strata::cuda::gemv_detail
