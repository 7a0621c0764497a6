// UNTESTED ON A GPU until a device check has run it.
#include "bench_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/cuda_error.hpp"
#include "kernels/products/gemv.cuh"
#include "random_blocks.hpp"
#include "quant/formats.hpp"
#include "quant/half.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/type_ids.hpp"
#include "util/error.hpp"

namespace strata::cuda::bench {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
    check(cudaMalloc(&p_, std::max<size_t>(bytes, 1)), ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str());
}

DeviceBuffer::~DeviceBuffer() {
    if (p_) cudaFree(p_);  // nothing to do about a failure here (e.g. after a sticky error)
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : p_(other.p_), bytes_(other.bytes_) {
    other.p_ = nullptr;
    other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
        if (p_) cudaFree(p_);
        p_ = other.p_;
        bytes_ = other.bytes_;
        other.p_ = nullptr;
        other.bytes_ = 0;
    }
    return *this;
}

namespace {

class Events {
public:
    Events() {
        check(cudaEventCreate(&start), "cudaEventCreate");
        if (cudaError_t e = cudaEventCreate(&stop); e != cudaSuccess) {
            cudaEventDestroy(start);
            check(e, "cudaEventCreate");
        }
    }
    ~Events() {
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
    Events(const Events&) = delete;
    Events& operator=(const Events&) = delete;
    double seconds() const {
        check(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        return double(ms) * 1e-3;
    }
    cudaEvent_t start = nullptr, stop = nullptr;
};

constexpr int kWarmupLaunches = 3;
constexpr int kMaxLaunchesPerSample = 4096;

}  // namespace

Timing time_launches(cudaStream_t stream, int samples, double sample_seconds, const char* what,
                     const std::function<cudaError_t(int64_t k)>& launch) {
    Timing t;
    int64_t k = 0;
    auto issue = [&](int n) {
        for (int i = 0; i < n; ++i) check(launch(k++), what);
    };
    Events ev;
    issue(kWarmupLaunches);
    t.warmup_launches = kWarmupLaunches;
    check(cudaEventRecord(ev.start, stream), "cudaEventRecord");
    issue(1);
    check(cudaEventRecord(ev.stop, stream), "cudaEventRecord");
    const double one = std::max(ev.seconds(), 1e-7);
    t.launches_per_sample = int(std::clamp(std::ceil(sample_seconds / one), 1.0, double(kMaxLaunchesPerSample)));
    for (int s = 0; s < samples; ++s) {
        check(cudaEventRecord(ev.start, stream), "cudaEventRecord");
        issue(t.launches_per_sample);
        check(cudaEventRecord(ev.stop, stream), "cudaEventRecord");
        t.samples_s.push_back(ev.seconds() / t.launches_per_sample);
    }
    check(cudaStreamSynchronize(stream), what);
    std::vector<double> sorted = t.samples_s;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    t.median_s = n == 0 ? 0 : n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    return t;
}

namespace {

void fill_random_bytes(uint8_t* p, size_t n, FastRng& rng) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint64_t v = rng.next();
        std::memcpy(p + i, &v, 8);
    }
    if (i < n) {
        const uint64_t v = rng.next();
        std::memcpy(p + i, &v, n - i);
    }
}

}  // namespace

std::vector<uint8_t> random_matrix_bytes(uint32_t type, int64_t rows, int64_t cols, FastRng& rng) {
    const size_t row_bytes = quant::row_size(type, cols);
    std::vector<uint8_t> out(row_bytes * size_t(rows));
    const size_t n = size_t(rows) * size_t(cols);
    switch (type) {
        case quant::kTypeIQ1_S: {
            // Random grid indices, scale codes and delta signs; d sized like a trained model's
            // (|w| up to about 0.3), so dequantized f16 panels stay far from overflow.
            fill_random_bytes(out.data(), out.size(), rng);
            auto* blocks = reinterpret_cast<quant::block_iq1_s*>(out.data());
            for (size_t b = 0; b < out.size() / sizeof(quant::block_iq1_s); ++b)
                blocks[b].d = quant::f32_to_f16(rng.uniform(0.002f, 0.02f));
            break;
        }
        case quant::kTypeQ8_0: {
            fill_random_bytes(out.data(), out.size(), rng);
            auto* blocks = reinterpret_cast<quant::block_q8_0*>(out.data());
            for (size_t b = 0; b < out.size() / sizeof(quant::block_q8_0); ++b)
                blocks[b].d = quant::f32_to_f16(rng.uniform(0.0005f, 0.002f));
            break;
        }
        case quant::kTypeF16:
        case quant::kTypeBF16: {
            auto* h = reinterpret_cast<uint16_t*>(out.data());
            for (size_t i = 0; i < n; ++i) {
                const float v = rng.uniform(-0.1f, 0.1f);
                h[i] = type == quant::kTypeF16 ? quant::f32_to_f16(v) : quant::f32_to_bf16(v);
            }
            break;
        }
        case quant::kTypeF32: {
            auto* f = reinterpret_cast<float*>(out.data());
            for (size_t i = 0; i < n; ++i) f[i] = rng.uniform(-0.1f, 0.1f);
            break;
        }
        default: {
            // The other quantized types: random bytes with finite scales of moderate size.
            const int64_t be = quant::block_elements(type);
            if (be <= 1 || !gemv_supports(type))
                fail(Status::unsupported, "random_matrix_bytes: no generator for ggml type " + std::to_string(type));
            fill_random_bytes(out.data(), out.size(), rng);
            set_random_block_scales(type, out.data(), n / size_t(be), [&] { return rng.next(); });
            break;
        }
    }
    return out;
}

std::vector<float> random_floats(size_t n, FastRng& rng) {
    std::vector<float> v(n);
    for (auto& x : v) {
        x = rng.uniform(-1.0f, 1.0f);
        if (x == 0.0f) x = 0.5f;
    }
    return v;
}

std::vector<uint16_t> random_halves(size_t n, FastRng& rng) {
    std::vector<uint16_t> v(n);
    for (auto& h : v) h = quant::f32_to_f16(rng.uniform(-1.0f, 1.0f));
    return v;
}

void upload(const DeviceBuffer& dst, size_t offset, const void* src, size_t bytes) {
    if (offset + bytes > dst.bytes()) fail(Status::internal, "benchmark upload past the end of its buffer");
    check(cudaMemcpy(dst.get<uint8_t>() + offset, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
}

bool all_finite(const float* device, size_t n) {
    std::vector<float> host(n);
    check(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
    return std::all_of(host.begin(), host.end(), [](float x) { return std::isfinite(x); });
}

void poison(void* device, size_t bytes, cudaStream_t stream) {
    check(cudaMemsetAsync(device, 0xFF, bytes, stream), "cudaMemsetAsync (NaN poison)");
}

}  // namespace strata::cuda::bench
