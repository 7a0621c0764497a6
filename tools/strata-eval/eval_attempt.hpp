// One attempt at one task: the session is reset, the attempt's sampling controls set, the
// prompt generated from under its timeout and token cap, the output judged. The result is the
// schema's attempt object, every figure as measured.
#pragma once

#include <nlohmann/json.hpp>

#include "eval_check.hpp"
#include "eval_suite.hpp"
#include "strata/strata.hpp"

namespace eval {

struct AttemptPlan {
    int round = 0;
    Sampling sampling;
    double timeout_s = 0;  // 0: none
};

// Verdicts: "timeout" when the wall clock passed timeout_s (checked at every token; a prefill
// cannot be interrupted, so it may overrun and is then still a timeout); "token_cap" when the
// output reached max_tokens or the context filled before it ended; "error" when generation
// failed; otherwise "pass" or "fail" from the answer or the tests. `sampler` (may be null) gets
// the context length as it grows.
// The attempt object with every field at its "nothing happened yet" value (verdict "error").
nlohmann::json blank_attempt(const AttemptPlan& plan);

// Judges TEXT into A: math, the answer it gives against the task's; code, TEXT as the completion
// the tests run on (in the sandbox). Sets "verdict", "extracted_answer", "error", "sandbox".
void judge(const Task& task, const std::string& text, const SandboxLimits& sandbox, nlohmann::json& a);

// The completion the tests see: OUTPUT up to the first stop string (the token that completed a
// stop string is emitted with it, and may carry text beyond it).
std::string cut_at_stop(const std::string& output, const std::vector<std::string>& stops);

nlohmann::json run_attempt(strata::model& m, strata::session& s, const Task& task, const AttemptPlan& plan,
                           const SandboxLimits& sandbox, strata::reports::memory_sampler* sampler);

}  // namespace eval
