// One warp's dot product of an IQ1_S row with float32 activations: lane g decodes group g (eight
// weights) of every 256-weight block with the shared decode (quant/iq1s_block.hpp) and the sum is
// reduced over the warp. Internal to the cuda/ kernels.
#pragma once

#include <cstdint>

#include "quant/iq1s_block.hpp"

namespace strata::cuda {

// The grid table in constant memory, from the same generated data as the host table. One copy
// per translation unit that includes this (16 KB of the 64 KB constant bank): the library is
// built without relocatable device code, so a constant cannot be shared across files.
static __constant__ uint64_t kIq1sGridDevice[quant::kIq1sGridSize] = {
#include "quant/iq1s_grid.inc"
};

__device__ __forceinline__ float iq1s_row_dot_warp(const quant::block_iq1_s* row, int64_t n_blocks, const float* x) {
    const int lane = int(threadIdx.x % 32);
    float sum = 0.0f;
    for (int64_t b = 0; b < n_blocks; ++b) {
        float w[8];
        quant::iq1s_decode_group(row[b], kIq1sGridDevice, lane, w);
        const float4* xv = reinterpret_cast<const float4*>(x + b * quant::kQK_K + lane * 8);
        const float4 x0 = xv[0], x1 = xv[1];
        sum += w[0] * x0.x + w[1] * x0.y + w[2] * x0.z + w[3] * x0.w + w[4] * x1.x + w[5] * x1.y + w[6] * x1.z +
               w[7] * x1.w;
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    return sum;
}

}  // namespace strata::cuda
