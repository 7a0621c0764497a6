#include "report/memory_sampler.hpp"

#include <algorithm>

#include "report/proc_stats.hpp"
#include "util/error.hpp"

namespace strata::report {

MemorySample take_memory_sample(double t_s, int64_t context_tokens,
                                const std::function<std::optional<uint64_t>()>& gpu_used) {
    MemorySample s;
    s.t_s = t_s;
    s.context_tokens = context_tokens;
    if (auto p = read_process_memory()) {
        s.rss_bytes = p->rss_bytes;
        s.vm_hwm_bytes = p->hwm_bytes;
    }
    if (auto h = read_host_memory()) s.mem_available_bytes = h->available_bytes;
    if (auto sw = read_swap_counters()) {
        s.swap_pages_in = sw->pages_in;
        s.swap_pages_out = sw->pages_out;
    }
    if (gpu_used) s.gpu_used_bytes = gpu_used();
    return s;
}

MemorySummary summarize_samples(const std::vector<MemorySample>& samples, double cadence_ms) {
    MemorySummary m;
    m.cadence_ms = cadence_ms;
    m.n_samples = samples.size();
    if (samples.empty()) return m;
    m.duration_s = std::max(0.0, samples.back().t_s - samples.front().t_s);
    for (const MemorySample& s : samples) {
        if (s.rss_bytes && (!m.sampled_peak_rss_bytes || *s.rss_bytes > *m.sampled_peak_rss_bytes)) {
            m.sampled_peak_rss_bytes = s.rss_bytes;
            m.sampled_peak_t_s = s.t_s;
            m.sampled_peak_context_tokens = s.context_tokens;
        }
        if (s.vm_hwm_bytes) m.kernel_hwm_bytes = std::max(m.kernel_hwm_bytes.value_or(0), *s.vm_hwm_bytes);
        if (s.mem_available_bytes)
            m.min_mem_available_bytes = std::min(m.min_mem_available_bytes.value_or(UINT64_MAX), *s.mem_available_bytes);
        if (s.gpu_used_bytes)
            m.sampled_peak_gpu_used_bytes = std::max(m.sampled_peak_gpu_used_bytes.value_or(0), *s.gpu_used_bytes);
    }
    // Counter deltas need both ends; a counter that went backwards (reboot, foreign data) is unknown.
    const MemorySample &first = samples.front(), &last = samples.back();
    if (first.swap_pages_in && last.swap_pages_in && *last.swap_pages_in >= *first.swap_pages_in)
        m.swap_pages_in_delta = *last.swap_pages_in - *first.swap_pages_in;
    if (first.swap_pages_out && last.swap_pages_out && *last.swap_pages_out >= *first.swap_pages_out)
        m.swap_pages_out_delta = *last.swap_pages_out - *first.swap_pages_out;
    return m;
}

MemorySampler::MemorySampler(std::chrono::milliseconds cadence, GpuHook gpu_used)
    : cadence_(cadence), gpu_used_(std::move(gpu_used)) {
    if (cadence.count() <= 0) fail(Status::invalid_argument, "memory sampler cadence must be positive");
}

MemorySampler::~MemorySampler() { stop(); }

void MemorySampler::start() {
    {
        std::lock_guard lock(mutex_);
        if (started_) fail(Status::invalid_argument, "memory sampler already started");
        started_ = true;
        t0_ = std::chrono::steady_clock::now();
    }
    record_sample();
    thread_ = std::thread([this] { run(); });
}

void MemorySampler::stop() {
    {
        std::lock_guard lock(mutex_);
        if (!thread_.joinable()) return;
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    record_sample();
}

void MemorySampler::record_sample() {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    MemorySample s = take_memory_sample(t, context_tokens_.load(std::memory_order_relaxed), gpu_used_);
    std::lock_guard lock(mutex_);
    samples_.push_back(std::move(s));
}

void MemorySampler::run() {
    // Deadlines on a fixed grid from t0, so that the cadence does not drift by the sampling time.
    auto next = t0_ + cadence_;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            if (wake_.wait_until(lock, next, [this] { return stopping_; })) return;
        }
        record_sample();
        next += cadence_;
        const auto now = std::chrono::steady_clock::now();
        if (next < now) next = now + cadence_;  // fell behind: skip missed slots rather than burst
    }
}

std::vector<MemorySample> MemorySampler::samples() const {
    std::lock_guard lock(mutex_);
    return samples_;
}

MemorySummary MemorySampler::summary() const {
    return summarize_samples(samples(), double(cadence_.count()));
}

}  // namespace strata::report
