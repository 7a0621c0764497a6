// strata-eval --server URL: a suite run through an OpenAI-compatible server (strata-server or
// another), with the same rounds, verdicts and scoring as a local run.
//
// The report is JSON (schema "strata.server-eval/1") plus Markdown beside it. It is not a
// strata.report/1: that schema pins a local artifact (shard hashes) and this process's runtime,
// neither of which a client of a remote server can know. Its "runtime" section is what the
// server says about itself (GET /v1/models as answered, the settings it reports) beside this
// client's build; "client" holds the API path, the model asked for and the per-request timeout.
#pragma once

#include <string>

#include "eval_check.hpp"
#include "eval_rounds.hpp"

namespace eval {

struct ServerEvalOptions {
    std::string url, api_key, model;  // model empty: the first one /v1/models lists
    bool completions = false;
    std::string suite, out;
    RoundPlan rounds;
    SandboxLimits sandbox;
};

// 0 once the report is written; throws openai::ClientError when the server cannot be described,
// std::runtime_error for a bad suite, strata::error when a file cannot be written.
int run_server_eval(const ServerEvalOptions& o);

}  // namespace eval
