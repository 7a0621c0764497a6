#include "iq1s_dequant.cuh"

#include "quant/iq/iq1s_block.hpp"

namespace strata::cuda {
namespace {

// The grid in constant memory, built from the same generated data as the host table.
__constant__ uint64_t kGridDevice[quant::kIq1sGridSize] = {
#include "quant/iq/iq1s_grid.inc"
};

// One thread per group of eight weights: 32 threads per block of 256 weights.
__global__ void iq1s_dequantize_kernel(const quant::block_iq1_s* blocks, size_t n_groups, float* out) {
    const size_t group = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (group >= n_groups) return;
    const quant::block_iq1_s& b = blocks[group / 32];
    float w[8];
    quant::iq1s_decode_group(b, kGridDevice, int(group % 32), w);
    float4* dst = reinterpret_cast<float4*>(out + group * 8);
    dst[0] = make_float4(w[0], w[1], w[2], w[3]);
    dst[1] = make_float4(w[4], w[5], w[6], w[7]);
}

}  // namespace

cudaError_t iq1s_dequantize(const void* blocks, size_t n_blocks, float* out, cudaStream_t stream) {
    if (n_blocks == 0) return cudaSuccess;
    if (!blocks || !out || (reinterpret_cast<uintptr_t>(blocks) & 1u) || (reinterpret_cast<uintptr_t>(out) & 15u))
        return cudaErrorInvalidValue;
    const size_t n_groups = n_blocks * 32;
    const unsigned threads = 256;
    const size_t grid = (n_groups + threads - 1) / threads;
    if (grid > 0x7fffffffu) return cudaErrorInvalidValue;
    iq1s_dequantize_kernel<<<unsigned(grid), threads, 0, stream>>>(
        static_cast<const quant::block_iq1_s*>(blocks), n_groups, out);
    return cudaGetLastError();
}

}  // namespace strata::cuda
