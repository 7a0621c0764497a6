// strata-eval: run a task suite (math and code tasks, JSONL) on a model and write a report that
// keeps the first pass, every attempt and its limits, and the retry history.
//
//   strata-eval MODEL [MORE-SHARDS...] SUITE.jsonl -o REPORT.json [--worker HOST:PORT ...]
//               [--timeout S] [--retry-failed] [--retry-timeouts --retry-timeout S2]
//               [--temp T] [--top-p P] [--top-k K] [--seed S] [--max-tokens N]
//   strata-eval compare A.json B.json [--force]
//
// Public headers only (strata.hpp); the report is assembled and validated by the library.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval_attempt.hpp"
#include "eval_suite.hpp"
#include "cli_args.hpp"
#include "cli_progress.hpp"
#include "report_sections.hpp"
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
    "       strata-eval compare A.json B.json [--force]\n"
    "Runs every task once (the first pass, never overwritten), then the retry rounds asked for:\n"
    "--retry-timeouts retries the timed-out tasks with --retry-timeout S2, --retry-failed the\n"
    "failed ones (wrong answer, token cap, error) with the first-pass limits. Timeouts and token-cap\n"
    "exhaustion are failures kept in the denominator. Per-task \"temperature\", \"top_p\", \"top_k\",\n"
    "\"seed\", \"max_tokens\" in the suite override the command line. Writes REPORT.json and REPORT.md.\n";

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
};


Options parse_args(int argc, char** argv) {
    Options o;
    bool wire_given = false;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        if (cli::pipeline_option(a, value, o.pipeline, wire_given)) continue;
        if (a == "-o") o.out = value();
        else if (a == "--timeout") o.timeout_s = cli::number(a, value(), 0, 1e7);
        else if (a == "--retry-failed") o.retry_failed = true;
        else if (a == "--retry-timeouts") o.retry_timeouts = true;
        else if (a == "--retry-timeout") o.retry_timeout_s = cli::number(a, value(), 0, 1e7);
        else if (a == "--temp") o.sampling.temperature = cli::number(a, value(), 0, 100);
        else if (a == "--top-p") o.sampling.top_p = cli::number(a, value(), 0, 1);
        else if (a == "--top-k") o.sampling.top_k = int64_t(cli::number(a, value(), 0, 1 << 30));
        else if (a == "--seed") o.sampling.seed = uint64_t(cli::number(a, value(), 0, 9e15));
        else if (a == "--max-tokens") o.sampling.max_tokens = int64_t(cli::number(a, value(), 1, 1 << 24));
        else if (a == "--ctx") o.n_ctx = int64_t(cli::number(a, value(), 0, 1e9));
        else if (a == "--threads") o.threads = int32_t(cli::number(a, value(), 0, 4096));
        else if (a == "--name") o.name = value();
        else if (a == "--sandbox-cpu") o.sandbox.cpu_seconds = cli::number(a, value(), 0.01, 86400);
        else if (a == "--sandbox-wall") o.sandbox.wall_seconds = cli::number(a, value(), 0.01, 86400);
        else if (a == "--sandbox-memory-mib") o.sandbox.address_space_bytes = uint64_t(cli::number(a, value(), 16, 1 << 20)) << 20;
        else if (a == "--memory-cadence-ms") o.cadence_ms = int32_t(cli::number(a, value(), 1, 3600000));
        else if (a == "-h" || a == "--help") cli::help(kUsage);
        else if (a.size() > 1 && a[0] == '-') throw cli::usage_error("unknown option " + a);
        else positional.push_back(a);
    }
    if (positional.size() < 2) throw cli::usage_error("needs a model and a suite");
    o.suite = positional.back();
    positional.pop_back();
    o.model = positional;
    if (o.out.empty()) throw cli::usage_error("-o REPORT.json is required");
    if (o.retry_timeouts != o.retry_timeout_s.has_value())
        throw cli::usage_error("--retry-timeouts and --retry-timeout S2 go together");
    cli::check_pipeline_options(o.pipeline, wire_given);
    if (o.name.empty()) o.name = o.suite.substr(o.suite.find_last_of('/') == std::string::npos ? 0 : o.suite.find_last_of('/') + 1);
    return o;
}

struct TaskState {
    const eval::Task* task;
    json attempts = json::array();
};

// Tasks a round retries: not passed in any attempt so far, latest verdict among the round's.
std::vector<TaskState*> to_retry(std::vector<TaskState>& states, const std::set<std::string>& verdicts) {
    std::vector<TaskState*> out;
    for (auto& st : states) {
        bool passed = false;
        for (const json& a : st.attempts) passed = passed || a["verdict"] == "pass";
        if (!passed && !st.attempts.empty() && verdicts.count(st.attempts.back()["verdict"].get<std::string>()))
            out.push_back(&st);
    }
    return out;
}

void progress(const TaskState& st, const json& a) {
    std::fprintf(stderr, "  round %d  %-24s %-9s %6.2f s  %lld+%lld tokens\n", a["round"].get<int>(),
                 st.task->id.c_str(), a["verdict"].get<std::string>().c_str(), a["wall_s"].get<double>(),
                 (long long)a["prompt_tokens"].get<int64_t>(), (long long)a["output_tokens"].get<int64_t>());
}

int run(const Options& o) {
    const std::vector<eval::Task> tasks = eval::load_suite(o.suite);
    cli::ProgressLines hashing("strata-eval");  // hashing every shard for the report, a GPU upload
    strata::model m(o.model, hashing.model_params());
    std::optional<strata::pipeline> pipe;
    std::optional<strata::session> session;
    const report_sections::Deployment deployment =
        report_sections::open_session(m, o.pipeline, o.n_ctx, o.threads, pipe, session);

    strata::reports::memory_sampler sampler(o.cadence_ms);
    sampler.start();
    std::vector<TaskState> states;
    for (const auto& t : tasks) states.push_back({&t});
    std::fprintf(stderr, "strata-eval: %zu tasks from %s\n", tasks.size(), o.suite.c_str());
    for (auto& st : states) {
        eval::AttemptPlan plan{0, st.task->sampling(o.sampling), o.timeout_s};
        st.attempts.push_back(eval::run_attempt(m, *session, *st.task, plan, o.sandbox, &sampler));
        progress(st, st.attempts.back());
    }

    // Retry rounds: timeouts first (they get the longer limit), then the other failures.
    json rounds = json::array();
    auto retry_round = [&](const std::string& label, const std::set<std::string>& verdicts, double timeout_s) {
        const int round = int(rounds.size()) + 1;
        rounds.push_back({{"round", round}, {"label", label}, {"retry_verdicts", verdicts}, {"timeout_s", timeout_s},
                          {"max_tokens", 0}});
        for (TaskState* st : to_retry(states, verdicts)) {
            eval::AttemptPlan plan{round, st->task->sampling(o.sampling), timeout_s};
            st->attempts.push_back(eval::run_attempt(m, *session, *st->task, plan, o.sandbox, &sampler));
            progress(*st, st->attempts.back());
        }
    };
    if (o.retry_timeouts) retry_round("retry the timeouts with a longer timeout", {"timeout"}, *o.retry_timeout_s);
    if (o.retry_failed) retry_round("retry the failures with the first-pass limits", {"fail", "token_cap", "error"}, o.timeout_s);
    sampler.stop();

    json record = {{"name", o.name}, {"rounds", rounds}, {"tasks", json::array()}};
    for (const auto& st : states)
        record["tasks"].push_back(
            {{"id", st.task->id}, {"kind", st.task->kind}, {"prompt", st.task->prompt}, {"attempts", st.attempts}});
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
    } catch (const strata::error& e) {
        std::cerr << "strata-eval: " << e.status_name() << ": " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        // The suite's own errors (file:line: what) and anything else, one line.
        std::cerr << "strata-eval: " << e.what() << "\n";
        return 2;
    }
}
