// IQ1_S -> float32 dequantization on the GPU (the reference the fused kernels are tested against).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace strata::cuda {

// Decodes n_blocks consecutive 50-byte IQ1_S blocks from device memory into 256*n_blocks floats.
// Blocks may sit at any 2-byte-aligned address, as rows of a GGUF tensor do.
cudaError_t iq1s_dequantize(const void* blocks, size_t n_blocks, float* out, cudaStream_t stream);

}  // namespace strata::cuda
