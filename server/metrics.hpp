// metrics.hpp: counters and gauges served as Prometheus text at GET /metrics.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "job.hpp"

namespace server {

// What the engine reports at the moment /metrics is read.
struct EngineGauges {
    int64_t slots_total = 0;
    int64_t slots_active = 0;
    int64_t kv_tokens_used = 0;      // positions held in every slot's cache
    int64_t kv_tokens_capacity = 0;  // slots * context
};

class Metrics {
public:
    void count_request(const std::string& endpoint, int status);
    void add_prompt_tokens(int64_t n);
    // Tokens sampled in one engine step (rate over the last seconds is tok/s).
    void add_generated_tokens(int64_t n);
    std::string render(const EngineGauges& engine, size_t queue_length, int64_t requests_in_flight, bool loaded);

private:
    double recent_tokens_per_second();
    std::mutex mutex_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
    uint64_t prompt_tokens_ = 0;
    uint64_t generated_tokens_ = 0;
    std::deque<std::pair<Clock::time_point, int64_t>> recent_;  // (when, tokens) of the last window
    Clock::time_point started_ = Clock::now();
};

}  // namespace server
