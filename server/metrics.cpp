// metrics.cpp: the Prometheus text exposition format (version 0.0.4).
#include "metrics.hpp"

#include <cstdio>

namespace server {
namespace {

constexpr auto kRateWindow = std::chrono::seconds(10);

void family(std::string& out, const char* name, const char* type, const char* help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

void sample(std::string& out, const std::string& name, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.17g\n", value);
    out += name;
    out += buf;
}

std::string label_value(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

}  // namespace

void Metrics::count_request(const std::string& endpoint, int status) {
    std::lock_guard lock(mutex_);
    ++requests_[{endpoint, status}];
}

void Metrics::add_prompt_tokens(int64_t n) {
    std::lock_guard lock(mutex_);
    prompt_tokens_ += uint64_t(n);
}

void Metrics::add_generated_tokens(int64_t n) {
    std::lock_guard lock(mutex_);
    generated_tokens_ += uint64_t(n);
    const auto now = Clock::now();
    recent_.emplace_back(now, n);
    while (!recent_.empty() && now - recent_.front().first > kRateWindow) recent_.pop_front();
}

double Metrics::recent_tokens_per_second() {
    const auto now = Clock::now();
    while (!recent_.empty() && now - recent_.front().first > kRateWindow) recent_.pop_front();
    if (recent_.empty()) return 0;
    int64_t tokens = 0;
    for (const auto& r : recent_) tokens += r.second;
    // Over the window, or since the server started when that is shorter.
    const double span = std::chrono::duration<double>(std::min<Clock::duration>(now - started_, kRateWindow)).count();
    return span > 0 ? double(tokens) / span : 0;
}

std::string Metrics::render(const EngineGauges& engine, size_t queue_length, int64_t in_flight, bool loaded) {
    std::lock_guard lock(mutex_);
    std::string out;
    family(out, "strata_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
    for (const auto& [key, n] : requests_)
        sample(out,
               "strata_requests_total{endpoint=\"" + label_value(key.first) + "\",status=\"" +
                   std::to_string(key.second) + "\"}",
               double(n));
    family(out, "strata_prompt_tokens_total", "counter", "Prompt tokens of the generation requests accepted.");
    sample(out, "strata_prompt_tokens_total", double(prompt_tokens_));
    family(out, "strata_generated_tokens_total", "counter", "Tokens sampled for every request.");
    sample(out, "strata_generated_tokens_total", double(generated_tokens_));
    family(out, "strata_tokens_per_second", "gauge", "Tokens sampled per second over the last 10 seconds.");
    sample(out, "strata_tokens_per_second", recent_tokens_per_second());
    family(out, "strata_queue_length", "gauge", "Requests waiting for a slot.");
    sample(out, "strata_queue_length", double(queue_length));
    family(out, "strata_requests_in_flight", "gauge", "Generation requests queued or in a slot.");
    sample(out, "strata_requests_in_flight", double(in_flight));
    family(out, "strata_slots_total", "gauge", "Request slots (--parallel).");
    sample(out, "strata_slots_total", double(engine.slots_total));
    family(out, "strata_slots_active", "gauge", "Slots running a request.");
    sample(out, "strata_slots_active", double(engine.slots_active));
    family(out, "strata_kv_cache_tokens_used", "gauge", "Positions held in the KV caches of every slot.");
    sample(out, "strata_kv_cache_tokens_used", double(engine.kv_tokens_used));
    family(out, "strata_kv_cache_tokens_capacity", "gauge", "Positions the KV caches of every slot can hold.");
    sample(out, "strata_kv_cache_tokens_capacity", double(engine.kv_tokens_capacity));
    family(out, "strata_kv_cache_usage_ratio", "gauge", "Used over capacity of the KV caches.");
    sample(out, "strata_kv_cache_usage_ratio",
           engine.kv_tokens_capacity ? double(engine.kv_tokens_used) / double(engine.kv_tokens_capacity) : 0.0);
    family(out, "strata_model_loaded", "gauge", "1 once the model is loaded and requests are served.");
    sample(out, "strata_model_loaded", loaded ? 1.0 : 0.0);
    return out;
}

}  // namespace server
