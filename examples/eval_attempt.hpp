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
nlohmann::json run_attempt(strata::model& m, strata::session& s, const Task& task, const AttemptPlan& plan,
                           const SandboxLimits& sandbox, strata::reports::memory_sampler* sampler);

}  // namespace eval
