// The memory sampler: a thread that records, at a stated cadence, the process's resident set and
// the kernel's high-water mark, host MemAvailable, the swap counters and GPU memory (through a
// hook), each sample stamped with its time and the context length being processed then.
//
// Its summary keeps two different figures apart: the sampled peak (the largest sample: a spike
// shorter than the cadence can fall between samples) and the kernel's VmHWM (exact, but for the
// whole life of the process, not just the sampled window).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace strata::report {

struct MemorySample {
    double t_s = 0;  // seconds since the sampler started
    std::optional<uint64_t> rss_bytes;            // VmRSS
    std::optional<uint64_t> vm_hwm_bytes;         // VmHWM at this moment
    std::optional<uint64_t> mem_available_bytes;  // host MemAvailable
    std::optional<uint64_t> swap_pages_in;        // /proc/vmstat pswpin (cumulative since boot)
    std::optional<uint64_t> swap_pages_out;       // pswpout
    std::optional<uint64_t> gpu_used_bytes;       // from the GPU hook; empty without one
    int64_t context_tokens = 0;                   // as set by the caller when sampled
};

struct MemorySummary {
    double cadence_ms = 0;
    size_t n_samples = 0;
    double duration_s = 0;  // first to last sample
    std::optional<uint64_t> sampled_peak_rss_bytes;  // max over samples
    std::optional<double> sampled_peak_t_s;
    std::optional<int64_t> sampled_peak_context_tokens;
    std::optional<uint64_t> kernel_hwm_bytes;  // VmHWM of the last sample
    std::optional<uint64_t> min_mem_available_bytes;
    std::optional<uint64_t> swap_pages_in_delta;  // last minus first sample
    std::optional<uint64_t> swap_pages_out_delta;
    std::optional<uint64_t> sampled_peak_gpu_used_bytes;
};

// The summary of any sample list (also for samples received from another node).
MemorySummary summarize_samples(const std::vector<MemorySample>& samples, double cadence_ms);

// One sample taken now (t_s and context_tokens as given).
MemorySample take_memory_sample(double t_s, int64_t context_tokens,
                                const std::function<std::optional<uint64_t>()>& gpu_used = {});

class MemorySampler {
public:
    // Returns GPU memory in use in bytes, or nullopt when unknown; called from the sampler thread.
    using GpuHook = std::function<std::optional<uint64_t>()>;

    explicit MemorySampler(std::chrono::milliseconds cadence, GpuHook gpu_used = {});
    ~MemorySampler();  // stops the thread
    MemorySampler(const MemorySampler&) = delete;
    MemorySampler& operator=(const MemorySampler&) = delete;

    // start() takes a sample at once and then one per cadence; stop() takes a last one, so even
    // a run shorter than the cadence has two. Calling start() twice is an error (throws).
    void start();
    void stop();

    // The context length being processed, attached to every later sample.
    void set_context_tokens(int64_t n) { context_tokens_.store(n, std::memory_order_relaxed); }

    std::chrono::milliseconds cadence() const { return cadence_; }
    std::vector<MemorySample> samples() const;
    MemorySummary summary() const;

private:
    void run();
    void record_sample();

    const std::chrono::milliseconds cadence_;
    GpuHook gpu_used_;
    std::atomic<int64_t> context_tokens_{0};
    std::chrono::steady_clock::time_point t0_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    bool started_ = false;
    std::vector<MemorySample> samples_;
    std::thread thread_;
};

// The memory section element of a report: node name, cadence, method, samples and summary.
std::string memory_record_json(const std::string& node, const std::vector<MemorySample>& samples,
                               double cadence_ms);

}  // namespace strata::report
