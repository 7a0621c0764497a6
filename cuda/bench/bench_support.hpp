// What the kernel benchmarks (kernel_bench.cpp) build on: owned device buffers, CUDA-event timing
// of back-to-back launches (warm-up, calibrated run length, median of samples, every sample
// kept), and fast pseudo-random host data in the tensor formats the kernels read (valid blocks:
// finite scales, never all zeros). Host code. UNTESTED ON A GPU until a device check has run it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <cuda_runtime.h>

namespace strata::cuda::bench {

// A device allocation, freed when it goes out of scope; throws Error (out_of_memory) on failure.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    template <class T = void>
    T* get() const {
        return static_cast<T*>(p_);
    }
    size_t bytes() const { return bytes_; }

private:
    void* p_ = nullptr;
    size_t bytes_ = 0;
};

struct Timing {
    std::vector<double> samples_s;  // seconds per launch, one value per sample
    int launches_per_sample = 0;
    int warmup_launches = 0;
    double median_s = 0;
};

// Times launch(k) on stream: warm-up launches, one timed launch that sizes the samples to about
// sample_seconds each (1 to 4096 launches), then `samples` samples of back-to-back launches
// between two CUDA events. k counts every launch, warm-up included, so launch can rotate over
// weight copies with k % copies. A failed launch throws Error naming `what`.
Timing time_launches(cudaStream_t stream, int samples, double sample_seconds, const char* what,
                     const std::function<cudaError_t(int64_t k)>& launch);

// splitmix64: fast and good enough to fill hundreds of megabytes of benchmark inputs.
class FastRng {
public:
    explicit FastRng(uint64_t seed) : s_(seed) {}
    uint64_t next() {
        uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // Uniform in [lo, hi).
    float uniform(float lo, float hi) { return lo + (hi - lo) * float(next() >> 40) * (1.0f / 16777216.0f); }

private:
    uint64_t s_;
};

// rows x cols weights of ggml type `type` (F32, F16, BF16, Q8_0, IQ1_S) as the file stores them:
// random scales of a plausible size, random quants / grid indices / signs, random floats.
std::vector<uint8_t> random_matrix_bytes(uint32_t type, int64_t rows, int64_t cols, FastRng& rng);

// n floats uniform in [-1, 1), never exactly zero.
std::vector<float> random_floats(size_t n, FastRng& rng);

// n binary16 values uniform in [-1, 1) (as uint16_t bits).
std::vector<uint16_t> random_halves(size_t n, FastRng& rng);

// Copies host bytes into dst at offset (synchronous); throws Error on a CUDA failure.
void upload(const DeviceBuffer& dst, size_t offset, const void* src, size_t bytes);

// Copies n floats back and tells whether every one is finite (outputs are poisoned with NaN
// before timing, so a value a kernel never wrote shows up here).
bool all_finite(const float* device, size_t n);

// Sets bytes of device memory to 0xFF: every float a NaN.
void poison(void* device, size_t bytes, cudaStream_t stream);

}  // namespace strata::cuda::bench
