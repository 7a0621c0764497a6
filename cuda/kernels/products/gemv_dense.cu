// The other decode products of gemv (gemv.cuh): Q8_0 weights with Q8_0 activations (an exact
// integer dot per 32-block scaled as the CPU backend does, lib/exec/cpu_backend.cpp), and F32 /
// F16 / BF16 weights with the float activations. One warp per row (Q8_0: per 4 rows, so each
// activation block read serves 4 rows), 8 warps per block; each lane reads its weights once and
// uses them for every token (1..kGemvMaxTokens). Not tuned to the bandwidth as the IQ1_S kernel is:
// Q8_0 blocks are 34 bytes, so a warp's loads of them touch 9 cache lines each.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemv.cu).
#include <cstdint>

#include <cuda_fp16.h>

#include "gemv.cuh"
#include "gemv_launch.cuh"
#include "quant/half.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/type_ids.hpp"

namespace strata::cuda::gemv_detail {
namespace {

constexpr int kRowsPerBlock = 8;  // one warp each (Q8_0: kQ8Rows each)
constexpr int kQ8Rows = 4;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kQ8_0Bytes = int(sizeof(quant::block_q8_0));  // 34: blocks start at any even address

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(kFullMask, v, o);
    return v;
}

// One block_q8_0 at a 2-byte aligned address, read with aligned loads that stay inside the block:
// eight 32-bit words from the 4-byte boundary at or below it, plus its last two or four bytes.
struct Q8_0Block {
    float d;
    int qs[8];
};

__device__ __forceinline__ Q8_0Block load_q8_0(const uint8_t* p) {
    const unsigned odd = unsigned(reinterpret_cast<uintptr_t>(p) & 2u);  // 0 or 2
    const unsigned* words = reinterpret_cast<const unsigned*>(p - odd);
    unsigned w[9];
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = __ldg(words + i);
    // Bytes 32..33 of the block: the low half of word 8 when aligned, else word 8 holds 30..33.
    w[8] = odd ? __ldg(words + 8) : unsigned(__ldg(reinterpret_cast<const unsigned short*>(p + 32)));
    Q8_0Block b;
    b.d = quant::f16_to_f32(uint16_t(odd ? (w[0] >> 16) : (w[0] & 0xffffu)));
    const unsigned shift = odd ? 32u : 16u;  // qs[4k..4k+3] start 2 bytes (or a word) into word k
#pragma unroll
    for (int k = 0; k < 8; ++k) b.qs[k] = int(__funnelshift_rc(w[k], w[k + 1], shift));
    return b;
}

// kQ8Rows rows per warp: each activation block loaded serves that many rows.
template <int T>
__global__ void __launch_bounds__(kRowsPerBlock * 32) q8_0_gemv_kernel(const uint8_t* w, int64_t rows,
                                                                       int64_t row_bytes, int nb,
                                                                       const uint8_t* act, float* y) {
    const int64_t r0 = (int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32) * kQ8Rows;
    if (r0 >= rows) return;  // whole warps
    const int n_rows = int(min(int64_t(kQ8Rows), rows - r0));
    const int lane = int(threadIdx.x % 32);
    float acc[kQ8Rows][T];
#pragma unroll
    for (int i = 0; i < kQ8Rows; ++i)
#pragma unroll
        for (int t = 0; t < T; ++t) acc[i][t] = 0.0f;
    for (int b = lane; b < nb; b += 32) {
        Q8_0Block wb[kQ8Rows];
#pragma unroll
        for (int i = 0; i < kQ8Rows; ++i)
            if (i < n_rows) wb[i] = load_q8_0(w + uint64_t(r0 + i) * uint64_t(row_bytes) + int64_t(b) * kQ8_0Bytes);
#pragma unroll
        for (int t = 0; t < T; ++t) {
            const Q8_0Block xb = load_q8_0(act + (int64_t(t) * nb + b) * kQ8_0Bytes);
#pragma unroll
            for (int i = 0; i < kQ8Rows; ++i) {
                if (i >= n_rows) continue;
                int s = 0;
#pragma unroll
                for (int k = 0; k < 8; ++k) s = __dp4a(wb[i].qs[k], xb.qs[k], s);
                // The CPU's term: float(s) * (d_w * d_x), each product rounded on its own.
                acc[i][t] = __fadd_rn(acc[i][t], __fmul_rn(float(s), __fmul_rn(wb[i].d, xb.d)));
            }
        }
    }
#pragma unroll
    for (int i = 0; i < kQ8Rows; ++i)
#pragma unroll
        for (int t = 0; t < T; ++t) {
            const float sum = warp_sum(acc[i][t]);
            if (lane == 0 && i < n_rows) y[int64_t(t) * rows + r0 + i] = sum;
        }
}

enum class FloatKind { f32, f16, bf16 };

template <FloatKind K>
__device__ __forceinline__ float load_one(const uint8_t* row, int64_t c) {
    if constexpr (K == FloatKind::f32) return __ldg(reinterpret_cast<const float*>(row) + c);
    const unsigned short h = __ldg(reinterpret_cast<const unsigned short*>(row) + c);
    if constexpr (K == FloatKind::f16) return __half2float(__ushort_as_half(h));
    return __uint_as_float(unsigned(h) << 16);
}

// Eight consecutive weights from a 16-byte aligned address (32 bytes for f32).
template <FloatKind K>
__device__ __forceinline__ void load_eight(const uint8_t* row, int64_t c, float out[8]) {
    if constexpr (K == FloatKind::f32) {
        const float4* p = reinterpret_cast<const float4*>(row) + c / 4;
        const float4 a = __ldg(p), b = __ldg(p + 1);
        out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w, out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
    } else {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(row) + c / 8);
        const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if constexpr (K == FloatKind::f16) {
                out[2 * i] = __half2float(__ushort_as_half((unsigned short)(words[i] & 0xffffu)));
                out[2 * i + 1] = __half2float(__ushort_as_half((unsigned short)(words[i] >> 16)));
            } else {
                out[2 * i] = __uint_as_float(words[i] << 16);
                out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
            }
        }
    }
}

// vec: cols % 8 == 0 and the weights and x 16-byte aligned (then every row and x row is too).
template <int T, FloatKind K, bool kVec>
__global__ void __launch_bounds__(kRowsPerBlock * 32) float_gemv_kernel(const uint8_t* w, int64_t rows,
                                                                        int64_t cols, int64_t row_bytes,
                                                                        const float* x, float* y) {
    const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
    if (r >= rows) return;
    const int lane = int(threadIdx.x % 32);
    const uint8_t* row = w + uint64_t(r) * uint64_t(row_bytes);
    float acc[T];
#pragma unroll
    for (int t = 0; t < T; ++t) acc[t] = 0.0f;
    if constexpr (kVec) {
        for (int64_t c = int64_t(lane) * 8; c < cols; c += 32 * 8) {
            float wv[8];
            load_eight<K>(row, c, wv);
#pragma unroll
            for (int t = 0; t < T; ++t) {
                const float4* xp = reinterpret_cast<const float4*>(x + int64_t(t) * cols + c);
                const float4 a = __ldg(xp), b = __ldg(xp + 1);
                float s = acc[t];
                s = fmaf(wv[0], a.x, s);
                s = fmaf(wv[1], a.y, s);
                s = fmaf(wv[2], a.z, s);
                s = fmaf(wv[3], a.w, s);
                s = fmaf(wv[4], b.x, s);
                s = fmaf(wv[5], b.y, s);
                s = fmaf(wv[6], b.z, s);
                acc[t] = fmaf(wv[7], b.w, s);
            }
        }
    } else {
        for (int64_t c = lane; c < cols; c += 32) {
            const float wv = load_one<K>(row, c);
#pragma unroll
            for (int t = 0; t < T; ++t) acc[t] = fmaf(wv, __ldg(x + int64_t(t) * cols + c), acc[t]);
        }
    }
#pragma unroll
    for (int t = 0; t < T; ++t) {
        const float sum = warp_sum(acc[t]);
        if (lane == 0) y[int64_t(t) * rows + r] = sum;
    }
}

unsigned blocks_for(int64_t rows) { return unsigned((rows + kRowsPerBlock - 1) / kRowsPerBlock); }

template <int T>
void launch_q8_0_t(const DeviceMatrix& w, const uint8_t* act, float* y, cudaStream_t stream) {
    const unsigned blocks = unsigned((w.rows + kRowsPerBlock * kQ8Rows - 1) / (kRowsPerBlock * kQ8Rows));
    q8_0_gemv_kernel<T><<<blocks, kRowsPerBlock * 32, 0, stream>>>(
        w.data, w.rows, int64_t(w.row_bytes), int(w.cols / quant::kQK8_0), act, y);
}

template <int T, FloatKind K>
void launch_float_k(const DeviceMatrix& w, const float* x, float* y, bool vec, cudaStream_t stream) {
    if (vec)
        float_gemv_kernel<T, K, true><<<blocks_for(w.rows), kRowsPerBlock * 32, 0, stream>>>(
            w.data, w.rows, w.cols, int64_t(w.row_bytes), x, y);
    else
        float_gemv_kernel<T, K, false><<<blocks_for(w.rows), kRowsPerBlock * 32, 0, stream>>>(
            w.data, w.rows, w.cols, int64_t(w.row_bytes), x, y);
}

template <int T>
void launch_float_t(const DeviceMatrix& w, const float* x, float* y, bool vec, cudaStream_t stream) {
    if (w.type == quant::kTypeF32) launch_float_k<T, FloatKind::f32>(w, x, y, vec, stream);
    else if (w.type == quant::kTypeF16) launch_float_k<T, FloatKind::f16>(w, x, y, vec, stream);
    else launch_float_k<T, FloatKind::bf16>(w, x, y, vec, stream);
}

}  // namespace

cudaError_t launch_q8_0(const DeviceMatrix& w, const void* act, int n_tokens, float* y, cudaStream_t stream) {
    const auto* a = static_cast<const uint8_t*>(act);
    switch (n_tokens) {
    case 1: launch_q8_0_t<1>(w, a, y, stream); break;
    case 2: launch_q8_0_t<2>(w, a, y, stream); break;
    case 3: launch_q8_0_t<3>(w, a, y, stream); break;
    case 4: launch_q8_0_t<4>(w, a, y, stream); break;
    case 5: launch_q8_0_t<5>(w, a, y, stream); break;
    case 6: launch_q8_0_t<6>(w, a, y, stream); break;
    case 7: launch_q8_0_t<7>(w, a, y, stream); break;
    case 8: launch_q8_0_t<8>(w, a, y, stream); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t launch_float(const DeviceMatrix& w, const float* x, int n_tokens, float* y, cudaStream_t stream) {
    const uintptr_t wa = reinterpret_cast<uintptr_t>(w.data), xa = reinterpret_cast<uintptr_t>(x);
    const uintptr_t elem = w.type == quant::kTypeF32 ? 4 : 2;
    if (wa % elem != 0 || xa % 4 != 0) return cudaErrorInvalidValue;  // misaligned elements
    const bool vec = w.cols % 8 == 0 && wa % 16 == 0 && xa % 16 == 0;
    switch (n_tokens) {
    case 1: launch_float_t<1>(w, x, y, vec, stream); break;
    case 2: launch_float_t<2>(w, x, y, vec, stream); break;
    case 3: launch_float_t<3>(w, x, y, vec, stream); break;
    case 4: launch_float_t<4>(w, x, y, vec, stream); break;
    case 5: launch_float_t<5>(w, x, y, vec, stream); break;
    case 6: launch_float_t<6>(w, x, y, vec, stream); break;
    case 7: launch_float_t<7>(w, x, y, vec, stream); break;
    case 8: launch_float_t<8>(w, x, y, vec, stream); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

}  // namespace strata::cuda::gemv_detail
