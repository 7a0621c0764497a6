// Activation quantizers for gemv, byte-identical to the CPU's quant::quantize_row_q8_k and
// quant::quantize_row_q8_0 (lib/quant/codecs/q8_k.cpp, q8_0.cpp; lib/ is built with -ffp-contract=off,
// so every multiply and add there is rounded on its own: here the _rn intrinsics, which nvcc
// never contracts into an FMA, and IEEE division, make the same roundings).
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemv.cu).
#include <cstdint>

#include "gemv_launch.cuh"
#include "quant/half.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::cuda::gemv_detail {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr unsigned kFullMask = 0xffffffffu;

// ggml's nearest_int: round half to even by adding 1.5 * 2^23, then the low mantissa bits.
__device__ __forceinline__ int nearest_int(float v) {
    const int bits = __float_as_int(__fadd_rn(v, 12582912.0f));
    return (bits & 0x007fffff) - 0x00400000;
}

// One warp per 256-value block: lane l holds values 8l..8l+7.
__global__ void quantize_q8_k_kernel(const float* x, int64_t cols, int64_t n_blocks_total, int nb, uint8_t* act) {
    const int64_t blk = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (blk >= n_blocks_total) return;  // whole warps leave together
    const int lane = int(threadIdx.x % 32);
    const int64_t t = blk / nb, b = blk % nb;
    const float* xb = x + t * cols + b * quant::kQK_K + 8 * lane;
    float v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = xb[j];

    // The first element of largest |x| (strictly larger replaces, as on the CPU; a NaN never
    // replaces): per lane in order, then across lanes, the lower index winning ties.
    float amax = 0.0f, max = 0.0f;
    int idx = 1 << 30;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const float ax = fabsf(v[j]);
        if (ax > amax) {
            amax = ax;
            max = v[j];
            idx = 8 * lane + j;
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
        const float oa = __shfl_xor_sync(kFullMask, amax, o);
        const float om = __shfl_xor_sync(kFullMask, max, o);
        const int oi = __shfl_xor_sync(kFullMask, idx, o);
        if (oa > amax || (oa == amax && oi < idx)) {
            amax = oa;
            max = om;
            idx = oi;
        }
    }

    uint8_t* out = act + blk * int64_t(sizeof(quant::block_q8_K));
    int32_t packed[2] = {0, 0};
    int sum8 = 0;
    float d = 0.0f;
    if (amax != 0.0f) {  // warp-uniform: every lane holds the same amax
        const float iscale = __fdiv_rn(-127.0f, max);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int q = min(127, nearest_int(__fmul_rn(iscale, v[j])));
            sum8 += int(int8_t(q));
            packed[j / 4] |= int32_t(uint32_t(uint8_t(int8_t(q))) << (8 * (j % 4)));
        }
        d = __fdiv_rn(1.0f, iscale);
    }
    // bsums[i] covers values 16i..16i+15: lanes 2i and 2i+1.
    const int sum16 = sum8 + __shfl_xor_sync(kFullMask, sum8, 1);
    // block_q8_K: d at 0, qs at 4, bsums at 260; a block starts 4-byte aligned (292 = 4 * 73).
    if (lane == 0) *reinterpret_cast<float*>(out) = d;
    int32_t* qs = reinterpret_cast<int32_t*>(out + 4 + 8 * lane);
    qs[0] = packed[0];
    qs[1] = packed[1];
    if (lane % 2 == 0) reinterpret_cast<int16_t*>(out + 260)[lane / 2] = int16_t(sum16);
}

// One warp per 32-value block: lane j holds value j.
__global__ void quantize_q8_0_kernel(const float* x, int64_t cols, int64_t n_blocks_total, int nb, uint8_t* act) {
    const int64_t blk = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (blk >= n_blocks_total) return;
    const int lane = int(threadIdx.x % 32);
    const int64_t t = blk / nb, b = blk % nb;
    const float v = x[t * cols + b * quant::kQK8_0 + lane];
    // The CPU's fold amax = amax > ax ? amax : ax, in element order (a NaN behaves as there too).
    const float ax_mine = fabsf(v);
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const float ax = __shfl_sync(kFullMask, ax_mine, j);
        amax = amax > ax ? amax : ax;
    }
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    uint8_t* out = act + blk * int64_t(sizeof(quant::block_q8_0));
    if (lane == 0) *reinterpret_cast<uint16_t*>(out) = quant::f32_to_f16(d);
    out[2 + lane] = uint8_t(int8_t(int(roundf(__fmul_rn(v, id)))));
}

int grid_for(int64_t n_blocks_total) { return int((n_blocks_total + kWarpsPerBlock - 1) / kWarpsPerBlock); }

}  // namespace

cudaError_t launch_quantize_q8_k(const float* x, int64_t cols, int n_tokens, void* act, cudaStream_t stream) {
    const int nb = int(cols / quant::kQK_K);
    const int64_t total = int64_t(nb) * n_tokens;
    quantize_q8_k_kernel<<<grid_for(total), kWarpsPerBlock * 32, 0, stream>>>(x, cols, total, nb,
                                                                              static_cast<uint8_t*>(act));
    return cudaGetLastError();
}

cudaError_t launch_quantize_q8_0(const float* x, int64_t cols, int n_tokens, void* act, cudaStream_t stream) {
    const int nb = int(cols / quant::kQK8_0);
    const int64_t total = int64_t(nb) * n_tokens;
    quantize_q8_0_kernel<<<grid_for(total), kWarpsPerBlock * 32, 0, stream>>>(x, cols, total, nb,
                                                                              static_cast<uint8_t*>(act));
    return cudaGetLastError();
}

}  // namespace strata::cuda::gemv_detail
