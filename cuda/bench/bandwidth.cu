// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_bandwidth.cu).
#include "bandwidth.cuh"

namespace strata::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;  // enough resident warps to keep several loads in flight per SM
constexpr int kUnroll = 4;       // independent 16-byte loads issued before any is used

__host__ __device__ inline uint32_t hash_word(uint64_t seed, uint64_t i) {
    // splitmix64 finalizer of (seed, index); upper half, zero mapped to one.
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const uint32_t w = uint32_t(z >> 32);
    return w ? w : 1u;
}

__device__ inline uint32_t fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

__global__ void stream_read_kernel(const uint4* __restrict__ p, size_t n, unsigned int* result) {
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    uint32_t acc = 0;
    for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = p[i + u * stride];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) acc ^= fold(v[u]);
    }
    for (; i < n; i += stride) acc ^= fold(p[i]);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, off);
    if ((threadIdx.x & 31) == 0 && acc != 0) atomicXor(result, acc);
}

__global__ void fill_kernel(uint32_t* p, size_t n, uint64_t seed) {
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = hash_word(seed, i);
}

cudaError_t grid_size(int* blocks) {
    int device = 0, sms = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess)
        return e;
    *blocks = (sms > 0 ? sms : 1) * kBlocksPerSm;
    return cudaSuccess;
}

}  // namespace

cudaError_t stream_read(const void* data, size_t bytes, unsigned int* result, cudaStream_t stream) {
    if (!data || !result || reinterpret_cast<uintptr_t>(data) % 16 != 0 || bytes % 16 != 0)
        return cudaErrorInvalidValue;
    if (bytes == 0) return cudaSuccess;
    int blocks = 0;
    if (cudaError_t e = grid_size(&blocks); e != cudaSuccess) return e;
    stream_read_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint4*>(data), bytes / 16, result);
    return cudaGetLastError();
}

unsigned int stream_read_reference(const void* data, size_t bytes) {
    const auto* w = static_cast<const uint32_t*>(data);
    uint32_t acc = 0;
    for (size_t i = 0; i < bytes / 4; ++i) acc ^= w[i];
    return acc;
}

cudaError_t fill_random_words(void* data, size_t bytes, uint64_t seed, cudaStream_t stream) {
    if (!data || reinterpret_cast<uintptr_t>(data) % 4 != 0 || bytes % 4 != 0) return cudaErrorInvalidValue;
    if (bytes == 0) return cudaSuccess;
    int blocks = 0;
    if (cudaError_t e = grid_size(&blocks); e != cudaSuccess) return e;
    fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint32_t*>(data), bytes / 4, seed);
    return cudaGetLastError();
}

uint32_t random_word(uint64_t seed, uint64_t i) { return hash_word(seed, i); }

}  // namespace strata::cuda
