#include "bench_run.hpp"

#include <chrono>
#include <stdexcept>

namespace bench {

namespace {

using Clock = std::chrono::steady_clock;

const char* kPassage =
    " The survey crew walked the ridge at dawn, counting cairns and noting where the old path had "
    "washed out. By noon the wind turned, clouds gathered over the valley, and they sheltered under "
    "the ledge to copy their notes into the ledger before the rain arrived.";

const char* stop_name(int32_t reason) {
    switch (reason) {
        case STRATA_STOP_MAX_TOKENS: return "max_tokens";
        case STRATA_STOP_END_OF_GENERATION: return "end_of_generation";
        case STRATA_STOP_STRING: return "stop_string";
        case STRATA_STOP_CALLBACK: return "callback";
        case STRATA_STOP_CONTEXT_FULL: return "context_full";
        default: return "unknown";
    }
}

}  // namespace

std::vector<int32_t> filler_tokens(strata::model& m, size_t n, bool with_bos) {
    const std::vector<int32_t> passage = m.tokenize(kPassage, false, false);
    if (passage.empty()) throw std::runtime_error("the vocabulary encodes the filler passage as no tokens");
    std::vector<int32_t> out;
    out.reserve(n);
    if (with_bos && n > 0) {
        const auto v = m.vocab();
        if (v.bos >= 0) out.push_back(v.bos);
    }
    for (size_t i = 0; out.size() < n; ++i) out.push_back(passage[i % passage.size()]);
    return out;
}

namespace {

// Greedy generation of `gen_tokens` from the session's last logits, timestamps since t0.
void generate_timed(strata::session& s, RunResult& r, int32_t gen_tokens, Clock::time_point t0,
                    strata::reports::memory_sampler* sampler) {
    auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); };
    // Generation continues from the prompt's last logits: an empty prompt adds no token.
    strata::generate_options g;
    g.max_tokens = gen_tokens;
    g.add_special = false;
    g.stop_at_end_of_generation = false;  // the stated output length, not the model's choice
    const auto gen = s.generate("", g, [&](int32_t token, std::string_view piece) {
        r.output_token_ids.push_back(token);
        r.output_text.append(piece);
        r.token_times_s.push_back(since(Clock::now()));
        if (sampler) sampler->set_context(r.prompt_tokens + int64_t(r.token_times_s.size()));
        return true;
    });
    r.decode_s = since(Clock::now()) - r.prefill_s;
    r.output_tokens = gen.n_generated;
    r.stop_reason = stop_name(gen.stop_reason);
}

}  // namespace

RunResult run_once(strata::session& s, const std::vector<int32_t>& prompt, int32_t gen_tokens,
                   strata::reports::memory_sampler* sampler) {
    RunResult r;
    s.reset();
    if (sampler) sampler->set_context(int64_t(prompt.size()));
    const auto t0 = Clock::now();
    s.decode(prompt);
    const auto t_prefilled = Clock::now();
    r.prompt_tokens = s.n_past();
    r.prefill_s = std::chrono::duration<double>(t_prefilled - t0).count();
    generate_timed(s, r, gen_tokens, t0, sampler);
    return r;
}

RunResult run_at_depth(strata::session& s, const std::vector<int32_t>& prompt, int32_t gen_tokens,
                       strata::reports::memory_sampler* sampler) {
    if (prompt.empty() || s.n_past() < int64_t(prompt.size()))
        throw std::runtime_error("run_at_depth: the session does not hold the prompt");
    RunResult r;
    s.seq_truncate(0, int64_t(prompt.size()) - 1);
    s.decode({prompt.back()});
    r.prompt_tokens = s.n_past();
    if (sampler) sampler->set_context(r.prompt_tokens);
    generate_timed(s, r, gen_tokens, Clock::now(), sampler);
    return r;
}

nlohmann::ordered_json run_json(const RunResult& r, const std::string& label, bool warmup) {
    const double first = r.token_times_s.empty() ? 0 : r.token_times_s.front();
    const double last = r.token_times_s.empty() ? 0 : r.token_times_s.back();
    return {{"label", label},
            {"warmup", warmup},
            {"prompt_tokens", r.prompt_tokens},
            {"output_tokens", r.output_tokens},
            {"stop_reason", r.stop_reason},
            {"prefill_s", r.prefill_s},
            {"prefill_tokens_per_s", r.prefill_s > 0 ? double(r.prompt_tokens) / r.prefill_s : 0.0},
            {"time_to_first_token_s", first},
            {"decode_s", r.decode_s},
            // Between the first and the last token: the steady decode rate, without the first sample.
            {"decode_tokens_per_s", r.output_tokens > 1 && last > first ? double(r.output_tokens - 1) / (last - first) : 0.0},
            {"token_times_s", r.token_times_s},
            {"output_token_ids", r.output_token_ids}};
}

}  // namespace bench
