// The fused decode GEMV for the Kimi release types (qtype_dot.cuh: Q4_K, Q5_K, Q6_K, IQ4_XS,
// IQ4_NL, IQ2_XXS, IQ3_XXS, IQ1_M): y[t][r] = W[r] . x[t] with x already quantized on the GPU to
// the type's activation format (Q8_K or Q8_0, byte for byte as the CPU, quantize_act.cu). Included
// by the .cu files that instantiate it (gemv_fused_k.cu, gemv_fused_iq.cu); internal to cuda/.
//
// One template, fused_gemv_kernel<kType, T, R>: T tokens (1..8), R rows per row group (1 for one
// token, else 2: each activation word loaded serves R rows). One warp computes one row group at a
// time; the blocks (FusedShape: 8 warps, IQ1_M 16) are persistent, their warps walking the row
// groups with a grid-wide stride, so the lookup tables some types keep in shared memory (IQ1_M's
// packed grid, 8 KiB; IQ2_XXS and IQ3_XXS grids and signs, 1-2 KiB) are copied once per block,
// and the number of blocks on an SM is capped where that copy would cost as much as the weights.
// Within a row group, lane l owns items l, l + 32, ... of the row's nb * kParts block parts (item
// i: part i % kParts of block i / kParts): consecutive lanes read consecutive words of one block,
// so a warp's weight loads are contiguous and each weight byte is read once. A lane loads its R
// weight parts (QDot::load_w), then per token the activation part (load_a) and adds QDot::dot to
// R x T accumulators; warp shuffles add the lanes (no block-wide barrier after the table copy).
//
// No register spills for T = 8, R = 2 (ptxas -v, sm_90 and sm_121); UNTESTED ON A GPU until a
// device check has run it (cuda/tests/test_gemv.cpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include <cuda_runtime.h>

#include "runtime/device_matrix.hpp"
#include "qtables_device.cuh"
#include "qtype_dot.cuh"

namespace strata::cuda::gemv_detail {

struct FusedArgs {
    const uint8_t* w;
    int64_t rows;
    int64_t row_bytes;
    int64_t n_groups;  // row groups: ceil(rows / R)
    int nb;            // blocks per row
    int act_row_bytes; // bytes of one token's activation row
    const uint8_t* act;
    float* y;          // [T][rows]
};

// Shared-memory lookup tables of a fused type (0 bytes: none), copied by the block's threads, and
// the block shape: warps per block and the most blocks an SM runs at once (0: as many as fit).
template <uint32_t kType>
struct FusedSmem {
    static constexpr int kBytes = 0;
    static constexpr int kWarps = 8;
    static constexpr int kMaxBlocksPerSm = 0;
    __device__ static DotTables fill(uint8_t*) { return DotTables{}; }
};

__device__ __forceinline__ void copy16(uint8_t* dst, const void* src, int bytes) {
    for (int i = int(threadIdx.x); i < bytes / 16; i += int(blockDim.x))
        reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
}

template <>
struct FusedSmem<quant::kTypeIQ2_XXS> {
    static constexpr int kBytes = 256 * 8 + 128;
    static constexpr int kWarps = 8;
    static constexpr int kMaxBlocksPerSm = 4;  // <= 8.5 KiB of table copies per SM and launch
    __device__ static DotTables fill(uint8_t* s) {
        copy16(s, kDevIq2xxsGrid, 256 * 8);
        copy16(s + 256 * 8, kDevIq2Signs, 128);
        DotTables t;
        t.iq2xxs_grid = reinterpret_cast<const uint64_t*>(s);
        t.iq2_signs = s + 256 * 8;
        return t;
    }
};

template <>
struct FusedSmem<quant::kTypeIQ3_XXS> {
    static constexpr int kBytes = 256 * 4 + 128;
    static constexpr int kWarps = 8;
    static constexpr int kMaxBlocksPerSm = 4;
    __device__ static DotTables fill(uint8_t* s) {
        copy16(s, kDevIq3xxsGrid, 256 * 4);
        copy16(s + 256 * 4, kDevIq2Signs, 128);
        DotTables t;
        t.iq3xxs_grid = reinterpret_cast<const uint32_t*>(s);
        t.iq2_signs = s + 256 * 4;
        return t;
    }
};

// The packed IQ1_S grid in global memory, built at compile time (qtype_dot.cuh).
static __device__ const Iq1PackedGrid kDevIq1PackedGrid = iq1_packed_grid();

template <>
struct FusedSmem<quant::kTypeIQ1_M> {
    static constexpr int kBytes = int(sizeof(Iq1PackedGrid));  // 8 KiB
    static constexpr int kWarps = 16;
    static constexpr int kMaxBlocksPerSm = 2;  // 16 KiB of copies per SM and launch, 32 warps
    __device__ static DotTables fill(uint8_t* s) {
        copy16(s, kDevIq1PackedGrid.entry, kBytes);
        DotTables t;
        t.iq1_packed = reinterpret_cast<const uint32_t*>(s);
        return t;
    }
};

__device__ __forceinline__ float fused_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <uint32_t kType, int T, int R>
__global__ void __launch_bounds__(FusedSmem<kType>::kWarps * 32) fused_gemv_kernel(FusedArgs a) {
    using D = QDot<kType>;
    using S = FusedSmem<kType>;
    constexpr int kActBytes = D::kAct == quant::kTypeQ8_K ? qdot::kQ8KBytes : qdot::kQ8_0Bytes;
    constexpr int kActBlocks = D::kElems / (D::kAct == quant::kTypeQ8_K ? quant::kQK_K : quant::kQK8_0);

    __shared__ __align__(16) uint8_t tables[S::kBytes > 0 ? S::kBytes : 16];
    const DotTables tab = S::fill(tables);
    if constexpr (S::kBytes > 0) __syncthreads();

    const int lane = int(threadIdx.x) & 31;
    const int n_items = a.nb * D::kParts;
    const int64_t warps = int64_t(gridDim.x) * S::kWarps;
    for (int64_t g = int64_t(blockIdx.x) * S::kWarps + int(threadIdx.x) / 32; g < a.n_groups; g += warps) {
        const int64_t r0 = g * R;
        float acc[R][T];
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int t = 0; t < T; ++t) acc[r][t] = 0.0f;
#pragma unroll 1
        for (int i = lane; i < n_items; i += 32) {
            const int b = i / D::kParts, part = i % D::kParts;
            typename D::W wp[R];
#pragma unroll
            for (int r = 0; r < R; ++r) {  // a row past the last reads the last (never stored)
                const int64_t row = min(r0 + r, a.rows - 1);
                wp[r] = D::load_w(a.w + row * a.row_bytes + int64_t(b) * D::kBytes, part, tab);
            }
#pragma unroll
            for (int t = 0; t < T; ++t) {
                const typename D::A xp =
                    D::load_a(a.act + int64_t(t) * a.act_row_bytes + int64_t(b) * kActBlocks * kActBytes, part);
#pragma unroll
                for (int r = 0; r < R; ++r) acc[r][t] += D::dot(wp[r], xp);
            }
        }
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int t = 0; t < T; ++t) {
                const float s = fused_warp_sum(acc[r][t]);
                if (lane == r * T + t && r0 + r < a.rows) a.y[int64_t(t) * a.rows + r0 + r] = s;
            }
    }
}

// Blocks of this kernel that fit on the current device at once (every SM full, or capped at
// kMaxBlocksPerSm), at least 1.
template <uint32_t kType, class Kernel>
cudaError_t resident_blocks(Kernel kernel, int* blocks) {
    using S = FusedSmem<kType>;
    int device = 0, sms = 0, per_sm = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return e;
    if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, S::kWarps * 32, 0); e != cudaSuccess)
        return e;
    if (S::kMaxBlocksPerSm > 0) per_sm = std::min(per_sm, S::kMaxBlocksPerSm);
    *blocks = std::max(1, per_sm * sms);
    return cudaSuccess;
}

template <uint32_t kType, int T>
cudaError_t launch_fused_t(const DeviceMatrix& w, const void* act, float* y, cudaStream_t stream) {
    using D = QDot<kType>;
    using S = FusedSmem<kType>;
    constexpr int R = T == 1 ? 1 : 2;
    static_assert(R * T <= 32, "one lane stores each (row, token) sum");
    FusedArgs a{};
    a.w = w.data;
    a.rows = w.rows;
    a.row_bytes = int64_t(w.row_bytes);
    a.n_groups = (w.rows + R - 1) / R;
    a.nb = int(w.cols / D::kElems);
    a.act_row_bytes = int(D::kAct == quant::kTypeQ8_K ? (w.cols / quant::kQK_K) * qdot::kQ8KBytes
                                                      : (w.cols / quant::kQK8_0) * qdot::kQ8_0Bytes);
    a.act = static_cast<const uint8_t*>(act);
    a.y = y;
    auto kernel = fused_gemv_kernel<kType, T, R>;
    // The number of resident blocks is a property of the kernel and the device: asked once per
    // instantiation (a process drives one model of device), then read without a driver call.
    static std::atomic<int> cached{0};
    int resident = cached.load(std::memory_order_relaxed);
    if (resident == 0) {
        if (cudaError_t e = resident_blocks<kType>(kernel, &resident); e != cudaSuccess) return e;
        cached.store(resident, std::memory_order_relaxed);
    }
    const int64_t blocks = std::min<int64_t>((a.n_groups + S::kWarps - 1) / S::kWarps, resident);
    kernel<<<unsigned(blocks), S::kWarps * 32, 0, stream>>>(a);
    return cudaGetLastError();
}

// The launcher of one fused type for 1..8 tokens (argument checks: gemv.cu).
template <uint32_t kType>
cudaError_t launch_fused_type(const DeviceMatrix& w, const void* act, int n_tokens, float* y, cudaStream_t stream) {
    switch (n_tokens) {
    case 1: return launch_fused_t<kType, 1>(w, act, y, stream);
    case 2: return launch_fused_t<kType, 2>(w, act, y, stream);
    case 3: return launch_fused_t<kType, 3>(w, act, y, stream);
    case 4: return launch_fused_t<kType, 4>(w, act, y, stream);
    case 5: return launch_fused_t<kType, 5>(w, act, y, stream);
    case 6: return launch_fused_t<kType, 6>(w, act, y, stream);
    case 7: return launch_fused_t<kType, 7>(w, act, y, stream);
    case 8: return launch_fused_t<kType, 8>(w, act, y, stream);
    default: return cudaErrorInvalidValue;
    }
}

}  // namespace strata::cuda::gemv_detail
