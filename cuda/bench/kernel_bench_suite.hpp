// The kernel benchmark suite's internals (kernel_bench.hpp runs it), shared by the files that
// define its row groups: kernel_bench.cpp (ceilings, GEMV, prefill products, attention, small
// ops) and kernel_bench_mla.cpp, kernel_bench_kda.cpp, kernel_bench_moe.cpp (the deepseek2 /
// Kimi kernels). Host code (C++20, g++). UNTESTED ON A GPU until a device check has run it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "bench_support.hpp"
#include "runtime/device_matrix.hpp"
#include "kernel_bench.hpp"
#include "util/error.hpp"

namespace strata::cuda::kernel_suite {

using json = nlohmann::ordered_json;
using bench::DeviceBuffer;
using bench::Timing;

inline constexpr uint64_t kAlign = 256;

struct Shape {
    int64_t rows = 0, cols = 0;
};

inline uint64_t round_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

inline std::string shape_text(Shape s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

inline std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

inline json timing_json(const Timing& t) {
    return {{"time_s", t.median_s},
            {"samples_s", t.samples_s},
            {"launches_per_sample", t.launches_per_sample},
            {"warmup_launches", t.warmup_launches}};
}

// How many copies of `bytes` at distinct addresses make one cycle read at least rotate_bytes.
inline int copies_for(uint64_t bytes, uint64_t rotate_bytes) {
    return int(std::clamp<uint64_t>((rotate_bytes + bytes - 1) / std::max<uint64_t>(bytes, 1), 1, 256));
}

// Copies of one weight matrix, each 256-byte aligned and padded (kDevicePadBytes), enough of them
// that cycling through them reads at least rotate_bytes, so no launch finds its weights in L2.
struct MatrixSet {
    uint32_t type = 0;
    Shape shape;
    uint64_t row_bytes = 0;
    uint64_t stride = 0;  // bytes from one copy to the next
    int copies = 1;
    DeviceBuffer buffer;

    uint64_t bytes() const { return row_bytes * uint64_t(shape.rows); }
    DeviceMatrix at(int64_t k) const {
        DeviceMatrix m;
        m.type = type;
        m.rows = shape.rows;
        m.cols = shape.cols;
        m.row_bytes = row_bytes;
        m.data = buffer.get<uint8_t>() + uint64_t(k % copies) * stride;
        return m;
    }
};

// Copies of one array (a cache, a recurrent state) at distinct 256-byte aligned addresses.
struct Replicas {
    uint64_t bytes = 0;   // one copy
    uint64_t stride = 0;  // bytes from one copy to the next
    int copies = 1;
    DeviceBuffer buffer;

    template <class T>
    T* at(int64_t k) const {
        return reinterpret_cast<T*>(buffer.get<uint8_t>() + uint64_t(k % copies) * stride);
    }
};

class Suite {
public:
    explicit Suite(const KernelBenchOptions& o);
    ~Suite();
    Suite(const Suite&) = delete;
    Suite& operator=(const Suite&) = delete;

    json run();

private:
    bool wanted(const std::string& name) const {
        return !o_.ceilings_only && (o_.filter.empty() || name.find(o_.filter) != std::string::npos);
    }
    void log(const std::string& line) const {
        if (o_.log) o_.log(line);
    }
    Timing time(const char* what, const std::function<cudaError_t(int64_t)>& launch) {
        return bench::time_launches(stream_, o_.samples, o_.sample_seconds, what, launch);
    }
    // Runs body, recording a failure as an error row instead of ending the suite; a sticky CUDA
    // error (the context is lost) ends every later group.
    template <class Body>
    void guarded(const std::string& name, Body&& body) {
        if (lost_) return;
        try {
            body();
        } catch (const Error& e) {
            errors_.push_back({{"name", name}, {"error", e.what()}});
            log(name + ": FAILED: " + e.what());
            cudaGetLastError();
            if (cudaError_t s = cudaDeviceSynchronize(); s != cudaSuccess) {
                lost_ = true;
                errors_.push_back({{"name", "suite"},
                                   {"error", std::string("the CUDA context is unusable after '") + name +
                                                 "' (" + cudaGetErrorName(s) + "); later rows were not run"}});
            }
        }
    }

    // Uploads `bytes` of host data and copies it on the device until one cycle through the copies
    // reads at least rotate_bytes_ (copies_for): how the caches and states rotate.
    Replicas replicated(const void* host, uint64_t bytes);

    MatrixSet matrices(uint32_t type, Shape s);
    json bandwidth_row(const std::string& name, const char* group, const Timing& t, double bytes, const char* counted);
    json flops_row(const std::string& name, const char* group, const Timing& t, double flops, double ceiling,
                   const std::string& ceiling_name, double goal_percent);
    void add(json row);

    void ceilings();
    void gemv_rows(uint32_t type, Shape s, std::span<const int> tokens, bool with_goal);
    void prefill_rows(uint32_t type, Shape s, std::span<const int> tokens);
    void attention_rows();
    void rms_norm_rows();
    void attn_res_mix_rows();  // kernel_bench.cpp
    void mla_rows();           // kernel_bench_mla.cpp
    void kda_rows();           // kernel_bench_kda.cpp
    void moe_rows();           // kernel_bench_moe.cpp

    const KernelBenchOptions& o_;
    bench::FastRng rng_;
    uint64_t seed_ = 0;
    int device_ = 0;
    uint64_t l2_bytes_ = 0, rotate_bytes_ = 0;
    cudaStream_t stream_ = nullptr;
    DeviceBuffer sink_;
    double stream_gbps_ = 0, copy_traffic_gbps_ = 0, best_cublas_tflops_ = 0;
    json ceilings_ = json::object(), rows_ = json::array(), errors_ = json::array();
    bool lost_ = false;
};

}  // namespace strata::cuda::kernel_suite
