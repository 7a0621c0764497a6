// What the CUDA test programs share (plain main(), no doctest: the GPU machines have none): the
// skip without a GPU (exit 77, ctest: skipped), the seeded generator, device buffers from host
// vectors and back. Every test draws fresh random data and prints its seed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// STRATA_CUDA_TEST_SMALL=1 (set by scripts/device-check.sh for the compute-sanitizer run, which
// is 10-100x slower): tests shrink their sizes to a few small cases that still cover ragged
// edges. Unset, empty or "0": the full sizes.
inline bool small_sizes() {
    const char* v = std::getenv("STRATA_CUDA_TEST_SMALL");
    return v && *v && std::strcmp(v, "0") != 0;
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
