// Judging one output: math answers by exact match after normalization; code completions by
// running the task's tests on them in the library's sandbox.
#pragma once

#include <string>

#include "eval_suite.hpp"

namespace eval {

// "1,234.50" -> "1234.5", "$-0.0" -> "0", "+7." -> "7"; "" when the text is not a plain decimal number.
std::string normalize_number(std::string text);

// The answer a math output gives: after "####" (GSM8K), else after the last "answer is"/"Answer:",
// else the last number in the text; normalized. "" when there is none.
std::string extract_math_answer(const std::string& output);

struct SandboxLimits {
    double cpu_seconds = 10;
    double wall_seconds = 20;
    uint64_t address_space_bytes = 1ull << 30;
    uint64_t file_size_bytes = 16ull << 20;
    uint64_t max_processes = 16;
};

struct CodeVerdict {
    bool passed = false;
    std::string sandbox_json;  // the library's sandbox result, kept in the attempt
    std::string error;         // why it failed, one line
};

// The program HumanEval runs: prompt + completion, the tests, check(entry_point).
std::string code_program(const Task& task, const std::string& completion);
CodeVerdict run_code_task(const Task& task, const std::string& completion, const SandboxLimits& limits);

}  // namespace eval
