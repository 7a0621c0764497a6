// Task suites for strata-eval: JSONL, one task per line, read as untrusted input (every field
// checked, errors name the line and the field).
//
//   math: {"id": "add-1", "kind": "math", "prompt": "...", "answer": "42"}
//   GSM8K as published: {"question": "...", "answer": "...reasoning...\n#### 1,234"} (the prompt is the
//          question, the expected answer N of the last line "#### N" without its commas, the id
//          "FILE:LINE" unless the line has "id")
//   code: HumanEval layout {"task_id": "Ex/0", "prompt": "def f(x):\n    \"\"\"...\"\"\"\n",
//          "entry_point": "f", "test": "def check(candidate):\n    assert candidate(1) == 2\n"}
//          ("kind": "code" is implied by entry_point + test; "canonical_solution", a string when
//          present, is not used)
//
// Optional per task, overriding the command line: "temperature", "top_p", "top_k", "seed",
// "max_tokens" (the sampling controls), "stop" (array of stop strings).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace eval {

struct Sampling {
    double temperature = 0;
    double top_p = 1;
    int64_t top_k = 0;
    uint64_t seed = 0;
    int64_t max_tokens = 256;
};

struct TaskOverrides {
    std::optional<double> temperature, top_p;
    std::optional<int64_t> top_k, max_tokens;
    std::optional<uint64_t> seed;
};

struct Task {
    std::string id;
    std::string kind;  // "math" or "code"
    std::string prompt;
    std::string answer;       // math: the expected answer as written in the suite
    std::string entry_point;  // code
    std::string test;         // code: defines check(candidate)
    std::vector<std::string> stop;
    bool stop_from_suite = false;  // false: the kind's defaults (HumanEval's stops for code)
    TaskOverrides overrides;

    Sampling sampling(const Sampling& defaults) const;
};

// Throws std::runtime_error "SUITE:LINE: what" on anything malformed, duplicate ids, or an empty suite.
std::vector<Task> load_suite(const std::string& path);

}  // namespace eval
