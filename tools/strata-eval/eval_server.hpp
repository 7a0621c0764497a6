// strata-eval --server: attempts through an OpenAI-compatible server instead of a local session.
// The same attempt object and verdicts as eval_attempt.hpp, from what the API answers:
//   "timeout"   the client's per-request deadline passed (the request is abandoned, the
//               connection closed), kept in the denominator like any failure;
//   "token_cap" finish_reason "length";
//   "error"     the server could not be reached, answered a status outside 2xx, or an answer
//               the API does not promise (the message says which);
//   otherwise "pass" or "fail" from the answer or the tests, judged as for a local run.
// Token counts are the server's "usage" (0 where it gives none).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "eval_attempt.hpp"
#include "common/openai_client.hpp"

namespace eval {

struct ServerTarget {
    std::string model;         // the "model" every request names
    bool completions = false;  // /v1/completions (the prompt continued) instead of /v1/chat/completions
};

nlohmann::json run_server_attempt(const openai::Client& client, const ServerTarget& target, const Task& task,
                                  const AttemptPlan& plan, const SandboxLimits& sandbox);

// The request body of one attempt (exposed for the report's record of what was asked).
nlohmann::json attempt_request(const ServerTarget& target, const Task& task, const Sampling& sampling);

// What the server says about itself: {"url", "models": GET /v1/models as answered, "model": the
// entry of the model used, "settings": that entry's fields beyond the OpenAI ones (the server's own
// settings, where it reports any), "props": GET /props where the server has it (llama-server), else null}.
// Throws openai::ClientError when /v1/models cannot be read. TARGET.model empty: the first model listed.
nlohmann::json describe_server(const openai::Client& client, ServerTarget& target);

// The code a chat answer gives for a HumanEval task: the first fenced block (```python ... ```),
// else the whole answer; put after the prompt, a block that redefines the entry point replaces the
// prompt's stub (Python keeps the last definition).
std::string chat_code_completion(const Task& task, const std::string& answer);

}  // namespace eval
