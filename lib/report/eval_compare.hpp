// May two evaluation reports be compared? Only when they ran the same artifact, the same tasks
// (same ids and prompts) and the same sampling controls and limits per task. The check lists
// every difference it finds, not just the first, so the reader sees all of them at once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::report {

struct Difference {
    std::string what;  // "artifact.model_identity", "tasks", "task HumanEval/1: sampling.temperature"
    std::string a;     // the value in report A ("" when absent there)
    std::string b;
};

struct Comparability {
    bool comparable = false;  // no differences and both reports readable
    std::vector<Difference> differences;
};

// Compares two report files' texts (untrusted: a malformed file is a difference, never a crash).
// `evaluation_a` / `evaluation_b` select the element of each report's "evaluations" array.
// Differences: artifact identity (model_identity, shard count and digests), task subset (ids only
// in A or only in B), per task: kind, prompt, and the first-pass sampling controls (temperature,
// top_p, top_k, seed, max_tokens) and timeout.
Comparability compare_evaluations(std::string_view report_a, std::string_view report_b, size_t evaluation_a = 0,
                                  size_t evaluation_b = 0);

}  // namespace strata::report
