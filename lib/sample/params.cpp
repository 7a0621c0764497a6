#include <charconv>
#include <cmath>

#include "sample/sampler.hpp"
#include "util/error.hpp"

namespace strata::sample {
namespace {

// Shortest decimal that reads back to the same float.
std::string float_text(float v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string float_json(float v) {
    if (std::isnan(v)) return "\"NaN\"";
    if (std::isinf(v)) return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return float_text(v);
}

[[noreturn]] void bad(const char* setting, const std::string& rule, const std::string& got) {
    fail(Status::invalid_argument, std::string("sampler: ") + setting + " " + rule + " (got " + got + ")");
}

}  // namespace

void validate(const SamplerParams& p) {
    if (!(p.temperature >= 0.0f) || std::isinf(p.temperature))
        bad("temperature", "must be finite and >= 0 (0 = greedy)", float_text(p.temperature));
    if (p.top_k < 0) bad("top_k", "must be >= 0 (0 = disabled)", std::to_string(p.top_k));
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) bad("top_p", "must be in (0, 1] (1 = disabled)", float_text(p.top_p));
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) bad("min_p", "must be in [0, 1] (0 = disabled)", float_text(p.min_p));
    if (!(p.repeat_penalty > 0.0f) || std::isinf(p.repeat_penalty))
        bad("repeat_penalty", "must be finite and > 0 (1 = disabled)", float_text(p.repeat_penalty));
    if (p.repeat_last_n < 0)
        bad("repeat_last_n", "must be >= 0 (0 = disabled)", std::to_string(p.repeat_last_n));
}

std::string SamplerParams::describe() const {
    return "temperature=" + float_text(temperature) + " top_k=" + std::to_string(top_k) +
           " top_p=" + float_text(top_p) + " min_p=" + float_text(min_p) +
           " repeat_penalty=" + float_text(repeat_penalty) + " repeat_last_n=" + std::to_string(repeat_last_n) +
           " seed=" + std::to_string(seed);
}

std::string SamplerParams::to_json() const {
    return "{\"temperature\":" + float_json(temperature) + ",\"top_k\":" + std::to_string(top_k) +
           ",\"top_p\":" + float_json(top_p) + ",\"min_p\":" + float_json(min_p) +
           ",\"repeat_penalty\":" + float_json(repeat_penalty) +
           ",\"repeat_last_n\":" + std::to_string(repeat_last_n) + ",\"seed\":" + std::to_string(seed) + "}";
}

}  // namespace strata::sample
