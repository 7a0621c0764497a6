// Warp-wide reductions over all 32 lanes (every lane gets the result) and the grid size of
// grid-stride kernels, shared by the cuda/ kernels. Internal to cuda/.
#pragma once

#include <cstdint>

namespace strata::cuda {

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Blocks of `threads` for n elements, at most cap (grid-stride kernels loop over the rest).
inline unsigned grid_blocks(uint64_t n, unsigned threads, unsigned cap = 65536u) {
    const uint64_t b = (n + threads - 1) / threads;
    return unsigned(b < cap ? b : cap);
}

}  // namespace strata::cuda
