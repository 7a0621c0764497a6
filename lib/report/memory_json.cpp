// The memory section of a report: writer (memory_record_json) and its validator rules.
#include <algorithm>
#include <optional>

#include "report/json_checker.hpp"
#include "report/json_io.hpp"
#include "report/memory_sampler.hpp"

namespace strata::report {

using nlohmann::json;

namespace {

const char* const kMethod =
    "a sampler thread reads /proc/self/status (VmRSS, VmHWM), /proc/meminfo (MemAvailable) and /proc/vmstat "
    "(pswpin, pswpout) once per cadence, plus once at start and once at stop; sampled_peak_rss_bytes is the "
    "largest sample and can miss a spike shorter than the cadence; kernel_hwm_bytes is the kernel's VmHWM for the "
    "whole process lifetime";

}  // namespace

std::string memory_record_json(const std::string& node, const std::vector<MemorySample>& samples, double cadence_ms) {
    json list = json::array();
    for (const MemorySample& s : samples)
        list.push_back({{"t_s", s.t_s},
                        {"rss_bytes", or_null(s.rss_bytes)},
                        {"vm_hwm_bytes", or_null(s.vm_hwm_bytes)},
                        {"mem_available_bytes", or_null(s.mem_available_bytes)},
                        {"swap_pages_in", or_null(s.swap_pages_in)},
                        {"swap_pages_out", or_null(s.swap_pages_out)},
                        {"gpu_used_bytes", or_null(s.gpu_used_bytes)},
                        {"context_tokens", std::max<int64_t>(0, s.context_tokens)}});
    const MemorySummary m = summarize_samples(samples, cadence_ms);
    json summary = {{"n_samples", m.n_samples},
                    {"duration_s", m.duration_s},
                    {"sampled_peak_rss_bytes", or_null(m.sampled_peak_rss_bytes)},
                    {"sampled_peak_t_s", or_null(m.sampled_peak_t_s)},
                    {"sampled_peak_context_tokens", or_null(m.sampled_peak_context_tokens)},
                    {"kernel_hwm_bytes", or_null(m.kernel_hwm_bytes)},
                    {"min_mem_available_bytes", or_null(m.min_mem_available_bytes)},
                    {"swap_pages_in_delta", or_null(m.swap_pages_in_delta)},
                    {"swap_pages_out_delta", or_null(m.swap_pages_out_delta)},
                    {"sampled_peak_gpu_used_bytes", or_null(m.sampled_peak_gpu_used_bytes)}};
    json record = {{"node", node}, {"cadence_ms", cadence_ms}, {"method", kMethod}, {"samples", list}, {"summary", summary}};
    return record.dump(-1, ' ', false, json::error_handler_t::replace);
}

void check_memory_record(JsonChecker& c, const json& m, const std::string& p) {
    if (!c.object(m, p, {"node", "cadence_ms", "method", "samples", "summary"})) return;
    c.string(m, "node", p);
    c.number(m, "cadence_ms", p, 0);
    c.string(m, "method", p);
    size_t n_samples = 0;
    std::optional<uint64_t> max_rss;  // recomputed: the summary's sampled peak must be this
    if (const json* samples = c.array(m, "samples", p)) {
        n_samples = samples->size();
        for (size_t i = 0; i < samples->size(); ++i) {
            const std::string sp = JsonChecker::at(JsonChecker::at(p, "samples"), i);
            const json& s = (*samples)[i];
            if (!c.object(s, sp, {"t_s", "rss_bytes", "vm_hwm_bytes", "mem_available_bytes", "swap_pages_in",
                                  "swap_pages_out", "gpu_used_bytes", "context_tokens"}))
                continue;
            c.number(s, "t_s", sp, 0);
            for (const char* k : {"rss_bytes", "vm_hwm_bytes", "mem_available_bytes", "swap_pages_in", "swap_pages_out",
                                  "gpu_used_bytes"})
                c.integer(s, k, sp, 0, true);
            c.integer(s, "context_tokens", sp, 0);
            if (auto it = s.find("rss_bytes"); it != s.end() && it->is_number_unsigned())
                max_rss = std::max(max_rss.value_or(0), it->get<uint64_t>());
        }
    }
    const json* s = c.sub_object(m, "summary", p,
                                 {"n_samples", "duration_s", "sampled_peak_rss_bytes", "sampled_peak_t_s",
                                  "sampled_peak_context_tokens", "kernel_hwm_bytes", "min_mem_available_bytes",
                                  "swap_pages_in_delta", "swap_pages_out_delta", "sampled_peak_gpu_used_bytes"});
    if (!s) return;
    const std::string sp = JsonChecker::at(p, "summary");
    if (const json* n = c.integer(*s, "n_samples", sp, 0); n && n->get<uint64_t>() != n_samples)
        c.problem(JsonChecker::at(sp, "n_samples"), "is " + n->dump() + " but there are " + std::to_string(n_samples) + " samples");
    if (auto it = s->find("sampled_peak_rss_bytes"); it != s->end() && (it->is_null() || it->is_number_unsigned())) {
        const bool matches = it->is_null() ? !max_rss : (max_rss && it->get<uint64_t>() == *max_rss);
        if (!matches)
            c.problem(JsonChecker::at(sp, "sampled_peak_rss_bytes"),
                      "is not the largest rss_bytes of the samples (" + (max_rss ? std::to_string(*max_rss) : "none") + ")");
    }
    c.number(*s, "duration_s", sp, 0);
    c.number(*s, "sampled_peak_t_s", sp, 0, true);
    for (const char* k : {"sampled_peak_rss_bytes", "sampled_peak_context_tokens", "kernel_hwm_bytes",
                          "min_mem_available_bytes", "swap_pages_in_delta", "swap_pages_out_delta",
                          "sampled_peak_gpu_used_bytes"})
        c.integer(*s, k, sp, 0, true);
}

}  // namespace strata::report
