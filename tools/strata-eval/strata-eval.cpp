// strata-eval: run a task suite (math and code tasks, JSONL) on a model and write a report that
// keeps the first pass, every attempt and its limits, and the retry history.
//
//   strata-eval MODEL [MORE-SHARDS...] SUITE.jsonl -o REPORT.json [--worker HOST:PORT ...]
//               [--timeout S] [--retry-failed] [--retry-timeouts --retry-timeout S2]
//               [--temp T] [--top-p P] [--top-k K] [--seed S] [--max-tokens N]
//   strata-eval SUITE.jsonl -o REPORT.json --server URL [--api-key KEY] [--model NAME] [--completions]
//               [--timeout-s S] [...the retry and sampling options]
//   strata-eval compare A.json B.json [--force]
//
// Public headers only (strata.hpp); the report is assembled and validated by the library.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval_attempt.hpp"
#include "eval_rounds.hpp"
#include "eval_server_run.hpp"
#include "eval_suite.hpp"
#include "common/openai_client.hpp"
#include "common/cli_args.hpp"
#include "common/cli_progress.hpp"
#include "common/report_sections.hpp"
#include "strata/strata.hpp"

int eval_compare_main(int argc, char** argv);

namespace {

using json = nlohmann::json;

const char* kUsage =
    "usage: strata-eval MODEL [MORE-SHARDS...] SUITE.jsonl -o REPORT.json [--worker HOST:PORT ...]\n"
    "                   [--layers A:B,...] [--key-file F] [--wire f16|bf16|f32] [--timeout S] [--retry-failed]\n"
    "                   [--retry-timeouts --retry-timeout S2] [--temp T] [--top-p P] [--top-k K]\n"
    "                   [--seed S] [--max-tokens N] [--ctx N] [--threads N] [--name NAME]\n"
    "                   [--sandbox-cpu S] [--sandbox-wall S] [--sandbox-memory-mib N]\n"
    "                   [--memory-cadence-ms N]\n"
    "       strata-eval SUITE.jsonl -o REPORT.json --server URL [--api-key KEY] [--model NAME] [--completions]\n"
    "                   [--timeout-s S] [the retry, sampling and sandbox options above]\n"
    "       strata-eval compare A.json B.json [--force]\n"
    "Runs every task once (the first pass, never overwritten), then the retry rounds asked for:\n"
    "--retry-timeouts retries the timed-out tasks with --retry-timeout S2, --retry-failed the\n"
    "failed ones (wrong answer, token cap, error) with the first-pass limits. Timeouts and token-cap\n"
    "exhaustion are failures kept in the denominator. Per-task \"temperature\", \"top_p\", \"top_k\",\n"
    "\"seed\", \"max_tokens\" in the suite override the command line. Writes REPORT.json and REPORT.md.\n"
    "Suites: strata's JSONL, GSM8K's test.jsonl (question, answer ending \"#### N\") and HumanEval's\n"
    "(task_id, prompt, canonical_solution, test, entry_point) as published.\n"
    "--server URL (http://HOST:PORT, with or without /v1) runs the suite through an OpenAI-compatible\n"
    "server: /v1/chat/completions (code tasks asked for the function in a code block), or\n"
    "/v1/completions with --completions; --api-key KEY (else $OPENAI_API_KEY) is sent as a Bearer\n"
    "token; --model NAME (else the first of GET /v1/models); --timeout-s S (= --timeout) is the\n"
    "client's deadline per request, 600 s unless given (0: none): a request past it is a timeout,\n"
    "a failure in the denominator. The report records GET /v1/models and the server's settings.\n";

struct Options {
    std::vector<std::string> model;
    std::string suite, out, name;
    strata::pipeline_params pipeline;
    eval::Sampling sampling;
    eval::SandboxLimits sandbox;
    double timeout_s = 0;
    bool retry_failed = false, retry_timeouts = false;
    std::optional<double> retry_timeout_s;
    int64_t n_ctx = 0;
    int32_t threads = 0;
    int32_t cadence_ms = 100;
    bool timeout_given = false;
    std::string server, api_key, server_model;
    bool completions = false;
    bool local_only_given = false;  // an option that needs a local model (--ctx, --threads, pipeline...)
};


Options parse_args(int argc, char** argv) {
    Options o;
    bool wire_given = false;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        if (cli::pipeline_option(a, value, o.pipeline, wire_given)) {
            o.local_only_given = true;
            continue;
        }
        if (a == "-o") o.out = value();
        else if (a == "--timeout" || a == "--timeout-s") {
            o.timeout_s = cli::number(a, value(), 0, 1e7);
            o.timeout_given = true;
        } else if (a == "--server") o.server = value();
        else if (a == "--api-key") o.api_key = value();
        else if (a == "--model") o.server_model = value();
        else if (a == "--completions") o.completions = true;
        else if (a == "--retry-failed") o.retry_failed = true;
        else if (a == "--retry-timeouts") o.retry_timeouts = true;
        else if (a == "--retry-timeout") o.retry_timeout_s = cli::number(a, value(), 0, 1e7);
        else if (a == "--temp") o.sampling.temperature = cli::number(a, value(), 0, 100);
        else if (a == "--top-p") o.sampling.top_p = cli::number(a, value(), 0, 1);
        else if (a == "--top-k") o.sampling.top_k = int64_t(cli::number(a, value(), 0, 1 << 30));
        else if (a == "--seed") o.sampling.seed = uint64_t(cli::number(a, value(), 0, 9e15));
        else if (a == "--max-tokens") o.sampling.max_tokens = int64_t(cli::number(a, value(), 1, 1 << 24));
        else if (a == "--ctx") {
            o.n_ctx = int64_t(cli::number(a, value(), 0, 1e9));
            o.local_only_given = true;
        } else if (a == "--threads") {
            o.threads = int32_t(cli::number(a, value(), 0, 4096));
            o.local_only_given = true;
        }
        else if (a == "--name") o.name = value();
        else if (a == "--sandbox-cpu") o.sandbox.cpu_seconds = cli::number(a, value(), 0.01, 86400);
        else if (a == "--sandbox-wall") o.sandbox.wall_seconds = cli::number(a, value(), 0.01, 86400);
        else if (a == "--sandbox-memory-mib") o.sandbox.address_space_bytes = uint64_t(cli::number(a, value(), 16, 1 << 20)) << 20;
        else if (a == "--memory-cadence-ms") {
            o.cadence_ms = int32_t(cli::number(a, value(), 1, 3600000));
            o.local_only_given = true;
        }
        else if (a == "-h" || a == "--help") cli::help(kUsage);
        else if (a.size() > 1 && a[0] == '-') throw cli::usage_error("unknown option " + a);
        else positional.push_back(a);
    }
    if (o.out.empty()) throw cli::usage_error("-o REPORT.json is required");
    if (!o.server.empty()) {
        if (positional.size() != 1) throw cli::usage_error("--server takes one suite and no model files (the server has the model)");
        if (o.local_only_given)
            throw cli::usage_error("--worker, --layers, --key-file, --wire, --ctx, --threads and --memory-cadence-ms are for a local model, not --server");
        if (!o.timeout_given) o.timeout_s = 600;  // the seed's client waited 600 s per request
        if (o.api_key.empty())
            if (const char* k = std::getenv("OPENAI_API_KEY")) o.api_key = k;
        try {
            openai::parse_url(o.server);
        } catch (const openai::ClientError& e) {
            throw cli::usage_error(e.what());
        }
    } else {
        if (!o.api_key.empty() || !o.server_model.empty() || o.completions)
            throw cli::usage_error("--api-key, --model and --completions go with --server URL");
        if (positional.size() < 2) throw cli::usage_error("needs a model and a suite");
    }
    o.suite = positional.back();
    positional.pop_back();
    o.model = positional;
    if (o.retry_timeouts != o.retry_timeout_s.has_value())
        throw cli::usage_error("--retry-timeouts and --retry-timeout S2 go together");
    cli::check_pipeline_options(o.pipeline, wire_given);
    if (o.name.empty()) o.name = o.suite.substr(o.suite.find_last_of('/') == std::string::npos ? 0 : o.suite.find_last_of('/') + 1);
    return o;
}

eval::RoundPlan round_plan(const Options& o) {
    eval::RoundPlan r;
    r.name = o.name;
    r.sampling = o.sampling;
    r.timeout_s = o.timeout_s;
    r.retry_failed = o.retry_failed;
    if (o.retry_timeouts) r.retry_timeout_s = o.retry_timeout_s;
    return r;
}

int run_server(const Options& o) {
    eval::ServerEvalOptions s;
    s.url = o.server;
    s.api_key = o.api_key;
    s.model = o.server_model;
    s.completions = o.completions;
    s.suite = o.suite;
    s.out = o.out;
    s.rounds = round_plan(o);
    s.sandbox = o.sandbox;
    return eval::run_server_eval(s);
}

int run(const Options& o) {
    if (!o.server.empty()) return run_server(o);
    const std::vector<eval::Task> tasks = eval::load_suite(o.suite);
    cli::ProgressLines hashing("strata-eval");  // hashing every shard for the report, a GPU upload
    strata::model m(o.model, hashing.model_params());
    std::optional<strata::pipeline> pipe;
    std::optional<strata::session> session;
    const report_sections::Deployment deployment =
        report_sections::open_session(m, o.pipeline, o.n_ctx, o.threads, pipe, session);

    strata::reports::memory_sampler sampler(o.cadence_ms);
    sampler.start();
    std::fprintf(stderr, "strata-eval: %zu tasks from %s\n", tasks.size(), o.suite.c_str());
    const json record = eval::run_rounds(tasks, round_plan(o), [&](const eval::Task& t, const eval::AttemptPlan& p) {
        return eval::run_attempt(m, *session, t, p, o.sandbox, &sampler);
    });
    sampler.stop();

    const json evaluation = json::parse(strata::reports::eval_score(record.dump(-1, ' ', false, json::error_handler_t::replace)));

    json sections = report_sections::base_sections(m, "strata-eval " + o.name, deployment);
    sections["memory"].push_back(json::parse(sampler.json(pipe ? "head (this process)" : "this process")));
    sections["evaluations"].push_back(evaluation);
    const std::string md = report_sections::write_report(sections, o.out);
    std::printf("%s\n", evaluation["score"]["summary"].get<std::string>().c_str());
    std::fprintf(stderr, "report: %s and %s\n", o.out.c_str(), md.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 2 && std::strcmp(argv[1], "compare") == 0) return eval_compare_main(argc - 1, argv + 1);
    const Options o = cli::parse_or_exit("strata-eval", kUsage, [&] { return parse_args(argc, argv); });
    try {
        return run(o);
    } catch (const openai::ClientError& e) {
        // The server could not be reached or described: the URL and what failed, one line.
        std::cerr << "strata-eval: " << e.what() << "\n";
        return 1;
    } catch (const strata::error& e) {
        std::cerr << "strata-eval: " << e.status_name() << ": " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        // The suite's own errors (file:line: what) and anything else, one line.
        std::cerr << "strata-eval: " << e.what() << "\n";
        return 2;
    }
}
