// The rounds of an evaluation, whatever runs the attempts (a local session or an OpenAI-API
// server): every task once (the first pass, never overwritten), then the retry rounds asked for.
// The result is the evaluation record strata::reports::eval_score scores.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval_attempt.hpp"
#include "eval_suite.hpp"

namespace eval {

struct RoundPlan {
    std::string name;
    Sampling sampling;      // the command line's controls; a task's own override them
    double timeout_s = 0;   // the first pass's (and --retry-failed's) limit; 0: none
    bool retry_failed = false;
    std::optional<double> retry_timeout_s;  // set: retry the timeouts with this limit
};

// One attempt: the schema's attempt object (eval_attempt.hpp describes the verdicts).
using AttemptRunner = std::function<nlohmann::json(const Task&, const AttemptPlan&)>;

// {"name", "rounds", "tasks"}: timeouts are retried first (they get the longer limit), then the
// other failures; a task that passed once is never retried. Each attempt is printed on stderr.
nlohmann::json run_rounds(const std::vector<Task>& tasks, const RoundPlan& plan, const AttemptRunner& attempt);

}  // namespace eval
