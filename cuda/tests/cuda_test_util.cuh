// What the CUDA test programs share (plain main(), no doctest: the GPU machines have none): the
// skip without a GPU (exit 77, ctest: skipped), the seeded generator, device buffers from host
// vectors and back, and the failure count with its PASS/FAIL lines and summary. Every test draws
// fresh random data and prints its seed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

namespace strata::cuda_test {

inline std::mt19937_64 rng;

// The checks that failed so far; finish() turns it into the exit status.
inline int failures = 0;

// One line per check, starting PASS or FAIL (scripts/device-check.sh greps "^FAIL"), then what
// was checked and, where given, what was measured.
inline void report(bool ok, const std::string& what) {
    failures += !ok;
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
}

inline void report(bool ok, const std::string& what, const std::string& detail) {
    failures += !ok;
    std::printf("%s %-40s %s\n", ok ? "PASS" : "FAIL", what.c_str(), detail.c_str());
}

// The measured error beside the bound it was held to.
inline void report(bool ok, const std::string& what, double err, double bound) {
    failures += !ok;
    std::printf("%s %-40s max err %.3g (tolerance %.3g)\n", ok ? "PASS" : "FAIL", what.c_str(), err, bound);
}

// Like report, but silent on success: for checks too many or too small to list one by one.
inline void expect(bool ok, const std::string& what) {
    if (ok) return;
    ++failures;
    std::printf("FAIL %s\n", what.c_str());
}

// The summary line; the exit status: 0 when no check failed, else 1.
inline int finish(const char* name) {
    std::printf("%s %s: %d failure(s)\n", failures ? "FAIL" : "PASS", name, failures);
    return failures ? 1 : 0;
}

// 77 (and a printed reason) when there is no usable GPU, or 1 (and the summary) when checks that
// need no GPU have already failed: a skip must not hide them. Otherwise seeds rng freshly, prints
// the seed and returns 0.
inline int start(const char* what) {
    int devices = 0;
    if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
        std::printf("SKIP %s: no usable CUDA device (%s)\n", what,
                    e == cudaSuccess ? "device count is 0" : cudaGetErrorString(e));
        return failures ? finish(what) : 77;
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
