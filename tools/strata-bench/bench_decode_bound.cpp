#include "bench_decode_bound.hpp"

#include <algorithm>
#include <vector>

#include "bench_stats.hpp"

namespace bench {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

int64_t arch_int(strata::model& m, const char* key, int64_t fallback) {
    try {
        const std::string full = std::string(m.get_string("general.architecture")) + "." + key;
        return m.has_key(full) ? m.get_int(full) : fallback;
    } catch (const strata::error&) {
        return fallback;
    }
}

}  // namespace

WeightBytes decode_weight_bytes(strata::model& m) {
    WeightBytes w;
    const int64_t n_expert = arch_int(m, "expert_count", 0);
    const int64_t n_used = arch_int(m, "expert_used_count", 0);
    bool has_output = false;
    uint64_t embd_bytes = 0, embd_rows = 1;
    for (const strata::tensor_info& t : m.tensors()) {
        const int64_t rows = t.shape.size() > 1 ? t.shape[1] : 1;
        if (t.name == "token_embd.weight") {
            embd_bytes = t.n_bytes;
            embd_rows = uint64_t(std::max<int64_t>(rows, 1));
        } else if (t.name == "output.weight") {
            has_output = true;
            w.head += t.n_bytes;
        } else if (ends_with(t.name, "_exps.weight") && n_expert > 0 && t.shape.size() >= 3) {
            w.experts_stored += t.n_bytes;
            w.active_experts += t.n_bytes / uint64_t(n_expert) * uint64_t(std::clamp<int64_t>(n_used, 0, n_expert));
        } else if (rows > 1) {
            w.matrices += t.n_bytes;
        } else {
            w.vectors_not_counted += t.n_bytes;
        }
    }
    w.tied = !has_output;
    if (w.tied) w.head = embd_bytes;
    w.embd_row = embd_bytes / embd_rows;
    w.per_token = w.matrices + w.active_experts + w.head + w.embd_row;
    return w;
}

double measure_stream_read_gbps(std::string* device_name) {
    strata_cuda_kernel_bench_params p;
    strata_cuda_kernel_bench_default_params(&p);
    p.ceilings_only = 1;
    const std::string text = strata::reports::detail::text(
        [&](char* b, size_t c, size_t* n) { return strata_cuda_kernel_bench_json(&p, b, c, n); });
    const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text);
    if (device_name) *device_name = doc["device"].value("name", std::string("unknown"));
    const auto& c = doc["ceilings"];
    if (!c.contains("stream_read"))
        throw strata::error(STRATA_ERR_INTERNAL, "the streaming-read ceiling failed: " + doc["errors"].dump());
    return c["stream_read"]["gb_per_s"].get<double>();
}

nlohmann::ordered_json decode_bound_element(const WeightBytes& w, double stream_gbps, const std::string& device_name,
                                            const nlohmann::ordered_json& benchmarks) {
    using json = nlohmann::ordered_json;
    const double bound = stream_gbps > 0 && w.per_token > 0 ? stream_gbps * 1e9 / double(w.per_token) : 0;
    json per_prompt = json::array();
    for (const json& b : benchmarks) {
        if (b.value("kind", "") != "prompt_length") continue;
        std::vector<double> decode, prefill;
        for (const json& r : b["runs"])
            if (!r["warmup"].get<bool>()) {
                decode.push_back(r["decode_tokens_per_s"].get<double>());
                prefill.push_back(r["prefill_tokens_per_s"].get<double>());
            }
        const Spread d = spread(decode), p = spread(prefill);
        per_prompt.push_back({{"prompt_tokens", b["prompt_tokens_stated"]},
                              {"measured_runs", d.n},
                              {"decode_tokens_per_s_median", d.median},
                              {"prefill_tokens_per_s_median", p.median},
                              {"percent_of_bound", bound > 0 ? json(100 * d.median / bound) : json(nullptr)}});
    }
    return {{"name", "decode against the streaming-read bound"},
            {"kind", "decode_bound"},
            {"device", device_name},
            {"weight_bytes_per_token", w.per_token},
            {"counted",
             "every weight matrix once, the token's one token_embd row, n_used/n_expert of stacked experts; "
             "the KV cache, activations, norms and biases are not counted"},
            {"matrix_bytes", w.matrices},
            {"head_bytes", w.head},
            {"tied_output", w.tied},
            {"embedding_row_bytes", w.embd_row},
            {"active_expert_bytes", w.active_experts},
            {"stored_expert_bytes", w.experts_stored},
            {"vector_bytes_not_counted", w.vectors_not_counted},
            {"stream_read_gb_per_s", stream_gbps > 0 ? json(stream_gbps) : json(nullptr)},
            {"stream_read_source", "strata_cuda_kernel_bench_json (ceilings only) on the same device, after the runs"},
            {"bound_tokens_per_s", bound > 0 ? json(bound) : json(nullptr)},
            {"per_prompt", per_prompt}};
}

}  // namespace bench
