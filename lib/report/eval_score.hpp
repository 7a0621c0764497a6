// Evaluation records and their score. Every task keeps all its attempts in order: the first
// (round 0) is the first-pass result and is never replaced; a retry is a new attempt in a later
// round with its own limits. A timeout or a token-cap exhaustion is a failed attempt and stays
// in the denominator. A composite score after retries is only ever printed together with the
// first-pass score and the retry history (summary_line).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace strata::report {

enum class Verdict { pass, fail, timeout, token_cap, error };

const char* verdict_name(Verdict v);                          // "pass", "fail", "timeout", "token_cap", "error"
bool verdict_from_name(const std::string& name, Verdict* out);  // false for anything else

struct SamplingControls {
    double temperature = 0;
    double top_p = 1;
    int64_t top_k = 0;
    uint64_t seed = 0;
    int64_t max_tokens = 0;  // output cap of the attempt
    bool operator==(const SamplingControls&) const = default;
};

struct Attempt {
    int round = 0;  // 0: first pass; n: retry round n
    SamplingControls sampling;
    double timeout_s = 0;  // per-request limit of this attempt (0: none)
    Verdict verdict = Verdict::error;
    std::string raw_output;
    std::string extracted_answer;
    std::string error;
    int64_t prompt_tokens = 0;
    int64_t output_tokens = 0;
    double wall_s = 0;
    std::string sandbox_json;  // the sandbox result of a code task (sandbox_result_json); "" = none
};

struct TaskRecord {
    std::string id;
    std::string kind;  // "math", "code"
    std::string prompt;
    std::vector<Attempt> attempts;  // in order; attempts[0] is the first pass
};

// A retry round: which verdicts it retried and the limits its attempts ran under.
struct RetryRound {
    int round = 0;  // 1, 2, ...
    std::string label;
    std::set<Verdict> retry_verdicts;
    double timeout_s = 0;
    int64_t max_tokens = 0;  // 0: as in the first pass
};

struct EvalRecord {
    std::string name;
    std::vector<TaskRecord> tasks;
    std::vector<RetryRound> rounds;  // retry rounds only, numbered 1.. in order
};

// Appending keeps the history rules: the first attempt of a task must be round 0 and there is
// exactly one; a retry must be in an existing round, later than the task's last attempt, only
// for a task not yet passed and whose latest verdict the round retries. Violations throw
// Error invalid_argument and change nothing.
void add_task(EvalRecord& record, std::string id, std::string kind, std::string prompt);
void record_attempt(EvalRecord& record, const std::string& task_id, Attempt attempt);
// Opens the next retry round and returns its number.
int begin_retry_round(EvalRecord& record, std::string label, std::set<Verdict> retry_verdicts, double timeout_s,
                      int64_t max_tokens);
// Tasks the round would retry: not passed so far, latest verdict among the round's verdicts.
std::vector<std::string> tasks_to_retry(const EvalRecord& record, int round);

struct VerdictCounts {
    int pass = 0, fail = 0, timeout = 0, token_cap = 0, error = 0;
    int& at(Verdict v);
    int at(Verdict v) const;
    int total() const { return pass + fail + timeout + token_cap + error; }
};

struct RoundScore {
    int round = 0;
    int eligible = 0;                 // tasks the round's verdicts covered (not passed before it)
    int retried = 0;                  // of those, the ones actually retried (fewer: a selection)
    VerdictCounts retried_verdicts;  // what the retried tasks had before this round
    VerdictCounts outcomes;          // what the retries gave
    int passed_after = 0;            // tasks passed in any attempt up to this round
};

struct EvalScore {
    int n_tasks = 0;
    int first_pass_passed = 0;
    VerdictCounts first_pass_verdicts;
    std::vector<RoundScore> rounds;
    int composite_passed = 0;  // after every round (== first_pass_passed without retries)
    std::string summary;       // summary_line
};

// Scores a record (summary included); throws Error invalid_argument naming the task when the record breaks the
// history rules (a record read back from a file is checked, not trusted). A task without any
// attempt counts as an error in the first pass.
EvalScore score_evaluation(const EvalRecord& record);

// The summary: "first pass 14/20 (4 timeouts at 600 s, 2 failures); after retrying the 4 timeouts
// at 1800 s: 18/20". A round that retried only some of the tasks it covered says so ("after
// retrying 3 of the 4 timeouts at 1800 s: 17/20").

}  // namespace strata::report
