#include "eval_attempt.hpp"

#include <chrono>

namespace eval {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

}  // namespace

std::string cut_at_stop(const std::string& output, const std::vector<std::string>& stops) {
    size_t cut = output.size();
    for (const auto& s : stops) cut = std::min(cut, output.find(s));
    return output.substr(0, cut);
}

json blank_attempt(const AttemptPlan& plan) {
    const Sampling& c = plan.sampling;
    return {{"round", plan.round},
            {"sampling",
             {{"temperature", c.temperature},
              {"top_p", c.top_p},
              {"top_k", c.top_k},
              {"seed", c.seed},
              {"max_tokens", c.max_tokens}}},
            {"timeout_s", plan.timeout_s},
            {"verdict", "error"},
            {"raw_output", ""},
            {"extracted_answer", ""},
            {"error", ""},
            {"prompt_tokens", 0},
            {"output_tokens", 0},
            {"wall_s", 0.0},
            {"sandbox", nullptr}};
}

void judge(const Task& task, const std::string& text, const SandboxLimits& sandbox, json& a) {
    if (task.kind == "math") {
        const std::string got = extract_math_answer(text);
        a["extracted_answer"] = got;
        const bool ok = !got.empty() && got == normalize_number(task.answer);
        a["verdict"] = ok ? "pass" : "fail";
        a["error"] = ok ? "" : got.empty() ? "no number in the output" : "expected " + task.answer;
        return;
    }
    a["extracted_answer"] = text;
    const CodeVerdict v = run_code_task(task, text, sandbox);
    a["sandbox"] = json::parse(v.sandbox_json);
    a["verdict"] = v.passed ? "pass" : "fail";
    a["error"] = v.error;
}

json run_attempt(strata::model& m, strata::session& s, const Task& task, const AttemptPlan& plan,
                 const SandboxLimits& sandbox, strata::reports::memory_sampler* sampler) {
    const Sampling& c = plan.sampling;
    json a = blank_attempt(plan);
    std::string output;
    bool timed_out = false;
    strata_generate_result r{};
    const auto t0 = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
    try {
        s.reset();
        // min_p and the repetition penalty are switched off so that the recorded controls are
        // every control in force.
        strata::sampling_params sp;
        sp.temperature = float(c.temperature);
        sp.top_p = float(c.top_p);
        sp.top_k = int32_t(c.top_k);
        sp.min_p = 0;
        sp.repeat_penalty = 1;
        sp.seed = c.seed;
        s.set_sampling(sp);
        strata::generate_options g;
        g.max_tokens = int32_t(c.max_tokens);
        g.stop_strings = task.stop;
        const int64_t prompt_tokens = int64_t(m.tokenize(task.prompt).size());
        if (sampler) sampler->set_context(prompt_tokens);
        int64_t produced = 0;
        r = s.generate(task.prompt, g, [&](int32_t, std::string_view piece) {
            output.append(piece);
            if (sampler) sampler->set_context(prompt_tokens + ++produced);
            if (plan.timeout_s > 0 && elapsed() > plan.timeout_s) timed_out = true;
            return !timed_out;
        });
    } catch (const strata::error& e) {
        a["error"] = std::string("generation failed: ") + e.status_name() + ": " + e.what();
    }
    const double wall = elapsed();
    a["wall_s"] = wall;
    a["raw_output"] = output;
    a["prompt_tokens"] = r.n_prompt_tokens;
    a["output_tokens"] = r.n_generated;
    if (!a["error"].get<std::string>().empty()) return a;
    if (timed_out || (plan.timeout_s > 0 && wall > plan.timeout_s)) {
        a["verdict"] = "timeout";
        a["error"] = "no answer within the " + json(plan.timeout_s).dump() + " s timeout (" +
                     std::to_string(r.n_generated) + " tokens generated)";
        return a;
    }
    if (r.stop_reason == STRATA_STOP_MAX_TOKENS || r.stop_reason == STRATA_STOP_CONTEXT_FULL) {
        a["verdict"] = "token_cap";
        a["error"] = r.stop_reason == STRATA_STOP_MAX_TOKENS
                         ? "the output reached the " + std::to_string(c.max_tokens) + "-token cap before it ended"
                         : "the context filled before the output ended";
        return a;
    }
    judge(task, task.kind == "math" ? output : cut_at_stop(output, task.stop), sandbox, a);
    return a;
}

}  // namespace eval
