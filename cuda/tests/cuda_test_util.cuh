// What the CUDA test programs share (plain main(), no doctest: the GPU machines have none): the
// skip without a GPU (exit 77, ctest: skipped), the seeded generator, device buffers from host
// vectors and back. Every test draws fresh random data and prints its seed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <cuda_runtime.h>

namespace strata::cuda_test {

inline std::mt19937_64 rng;

// 77 (and a printed reason) when there is no usable GPU; otherwise seeds rng freshly, prints the
// seed and returns 0.
inline int start(const char* what) {
    int devices = 0;
    if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
        std::printf("SKIP %s: no usable CUDA device (%s)\n", what,
                    e == cudaSuccess ? "device count is 0" : cudaGetErrorString(e));
        return 77;
    }
    const uint64_t seed = std::random_device{}();
    rng.seed(seed);
    std::printf("%s: seed %llu\n", what, (unsigned long long)seed);
    return 0;
}

inline std::vector<float> normal(size_t n, float sd = 1.0f, float mean = 0.0f) {
    std::normal_distribution<float> d(mean, sd);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

template <class T>
T* upload(const std::vector<T>& v) {
    T* d = nullptr;
    cudaMalloc(&d, v.size() * sizeof(T));
    cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
    return d;
}

template <class T>
std::vector<T> download(const T* d, size_t n) {
    std::vector<T> v(n);
    cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
    return v;
}

}  // namespace strata::cuda_test
