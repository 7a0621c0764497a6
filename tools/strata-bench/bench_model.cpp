// strata-bench MODEL [MORE-SHARDS...] -o REPORT.json [--worker HOST:PORT ...] [--repeat N]
//              [--warmup N] [--prompt-tokens 512,4096] [--gen-tokens N] [--context-probe N]
//              [--device cpu|cuda] [--decode-depths 1,512,4096]
// strata-bench decode MODEL ... (the same options; prompts of 512 and 4096 tokens by default)
//
// The default mode of strata-bench: prefill and decode at stated prompt and output lengths,
// --warmup runs first (recorded, excluded from the figures), then --repeat measured runs per
// prompt length, each keeping its exact token counts and per-token timestamps; the figures are
// given as median, min, max and standard deviation. --context-probe N runs an N-token input with
// planted facts and states what was completed and verified next to the configured window. Memory
// is sampled throughout. --decode-depths D,... times decode with D tokens already in the context
// (as llama-bench -d): one prefill of D tokens, then each run keeps the cache, re-decodes its last
// token and generates, so the repeats do not prefill again (bench_run.hpp, run_at_depth). With
// --worker the run goes through a pipeline, and the deployment and transport sections come from its
// plan. Writes REPORT.json and REPORT.md; public headers only.
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_decode_bound.hpp"
#include "bench_probe.hpp"
#include "bench_run.hpp"
#include "bench_stats.hpp"
#include "common/cli_args.hpp"
#include "common/cli_progress.hpp"
#include "common/report_sections.hpp"
#include "strata/strata.hpp"

namespace {

using json = nlohmann::ordered_json;

const char* kUsage =
    "usage: strata-bench MODEL [MORE-SHARDS...] -o REPORT.json [--worker HOST:PORT ...] [--layers A:B,...]\n"
    "                    [--key-file F] [--wire f16|bf16|f32] [--repeat N] [--warmup N]\n"
    "                    [--prompt-tokens 512,4096] [--gen-tokens N]\n"
    "                    [--context-probe N] [--probe-depths 0.1,0.5,0.9] [--ctx N] [--threads N]\n"
    "                    [--memory-cadence-ms N] [--device cpu|cuda] [--decode-depths 1,512,4096]\n"
    "       strata-bench decode MODEL ... (the same options; --prompt-tokens 512,4096 by default)\n"
    "Per prompt length: --warmup runs (default 1, recorded, not counted), then --repeat measured runs\n"
    "(default 3) of a prompt of exactly that many tokens and --gen-tokens generated tokens (default 32,\n"
    "greedy, end-of-generation ignored). Figures: median, min, max, stddev over the measured runs.\n"
    "--decode-depths D,...: decode tok/s with D tokens (at least 1, the BOS) already in the context:\n"
    "one prefill of D tokens (the first warm-up), then each run truncates the cache to D - 1 tokens,\n"
    "re-decodes the last one untimed and generates --gen-tokens (recurrent models prefill every run).\n"
    "--context-probe N: an N-token input with facts planted at --probe-depths, recall checked per depth.\n"
    "--device cuda: a local session on the GPU (default cpu). With --device cuda, and always for\n"
    "`decode`, the report adds the weight bytes a decode step reads and, on the GPU, the streaming-read\n"
    "ceiling measured in the same run, the bound tok/s they imply and each decode rate's percent of it.\n"
    "Writes REPORT.json and REPORT.md (strata-report plot REPORT.json adds the PNGs).\n";

struct Options {
    std::vector<std::string> model;
    std::string out;
    strata::pipeline_params pipeline;
    int repeat = 3, warmup = 1;
    std::vector<int64_t> prompt_tokens{128};
    std::vector<int64_t> decode_depths;  // --decode-depths; none by default
    int32_t gen_tokens = 32;
    int64_t probe_tokens = 0;
    std::vector<double> probe_depths{0.1, 0.5, 0.9};
    int64_t n_ctx = 0;
    int32_t threads = 0;
    int32_t cadence_ms = 50;
    int32_t device = STRATA_DEVICE_CPU;
    bool decode_mode = false;  // strata-bench decode
};


template <typename T>
std::vector<T> list(const std::string& flag, const std::string& text, double lo, double hi) {
    std::vector<T> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(T(cli::number(flag, item, lo, hi)));
    if (out.empty() || out.size() > 32) throw cli::usage_error(flag + " needs 1 to 32 comma-separated values");
    return out;
}

Options parse_args(int argc, char** argv, bool decode_mode) {
    Options o;
    o.decode_mode = decode_mode;
    if (decode_mode) o.prompt_tokens = {512, 4096};
    bool wire_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        if (cli::pipeline_option(a, value, o.pipeline, wire_given)) continue;
        if (a == "-o") o.out = value();
        else if (a == "--repeat") o.repeat = int(cli::number(a, value(), 1, 10000));
        else if (a == "--warmup") o.warmup = int(cli::number(a, value(), 0, 10000));
        else if (a == "--prompt-tokens") o.prompt_tokens = list<int64_t>(a, value(), 1, 1 << 30);
        else if (a == "--decode-depths") o.decode_depths = list<int64_t>(a, value(), 1, 1 << 30);
        else if (a == "--gen-tokens") o.gen_tokens = int32_t(cli::number(a, value(), 1, 1 << 24));
        else if (a == "--context-probe") o.probe_tokens = int64_t(cli::number(a, value(), 16, 1 << 30));
        else if (a == "--probe-depths") o.probe_depths = list<double>(a, value(), 0, 1);
        else if (a == "--ctx") o.n_ctx = int64_t(cli::number(a, value(), 1, 1 << 30));
        else if (a == "--threads") o.threads = int32_t(cli::number(a, value(), 0, 4096));
        else if (a == "--memory-cadence-ms") o.cadence_ms = int32_t(cli::number(a, value(), 1, 3600000));
        else if (a == "--device") {
            const std::string d = value();
            if (d == "cpu") o.device = STRATA_DEVICE_CPU;
            else if (d == "cuda") o.device = STRATA_DEVICE_CUDA;
            else throw cli::usage_error("--device takes cpu or cuda, not " + d);
        }
        else if (a == "-h" || a == "--help") cli::help(kUsage);
        else if (a.size() > 1 && a[0] == '-') throw cli::usage_error("unknown option " + a);
        else o.model.push_back(a);
    }
    if (o.model.empty()) throw cli::usage_error("no model file given");
    if (o.out.empty()) throw cli::usage_error("-o REPORT.json is required");
    if (o.probe_depths.size() > 6) throw cli::usage_error("--probe-depths takes at most 6 depths");
    int64_t need = 0;
    for (int64_t p : o.prompt_tokens) need = std::max(need, p + o.gen_tokens);
    for (int64_t d : o.decode_depths) need = std::max(need, d + o.gen_tokens);
    need = std::max(need, o.probe_tokens + 16);
    if (o.n_ctx == 0) o.n_ctx = need;
    else if (o.n_ctx < need)
        throw cli::usage_error("--ctx " + std::to_string(o.n_ctx) + " cannot hold the longest run (" + std::to_string(need) +
                         " tokens)");
    cli::check_pipeline_options(o.pipeline, wire_given);
    if (o.device != STRATA_DEVICE_CPU && !o.pipeline.workers.empty())
        throw cli::usage_error("--device cuda runs a local session; it does not combine with --worker");
    return o;
}

// The element of one prompt length: the settings, the spread of every figure, every run. The
// figures are numbers only; the Markdown rendering gives them their units and precision.
json length_element(const Options& o, int64_t prompt_n, const json& runs) {
    std::vector<double> prefill, decode, ttft, prefill_s, decode_s;
    for (const json& r : runs) {
        if (r["warmup"].get<bool>()) continue;
        prefill.push_back(r["prefill_tokens_per_s"].get<double>());
        decode.push_back(r["decode_tokens_per_s"].get<double>());
        ttft.push_back(r["time_to_first_token_s"].get<double>());
        prefill_s.push_back(r["prefill_s"].get<double>());
        decode_s.push_back(r["decode_s"].get<double>());
    }
    return {{"name", "prompt " + std::to_string(prompt_n) + " tokens, generate " + std::to_string(o.gen_tokens)},
            {"kind", "prompt_length"},
            {"prompt_tokens_stated", prompt_n},
            {"gen_tokens_stated", o.gen_tokens},
            {"measured_runs", bench::spread(prefill).n},
            {"warmup_runs_excluded", o.warmup},
            {"sampling", "greedy (temperature 0), end-of-generation ignored so every run generates the stated count"},
            {"spread",
             {{"prefill_tokens_per_s", bench::spread_json(bench::spread(prefill))},
              // Between the first and the last generated token (bench_run.cpp).
              {"decode_tokens_per_s", bench::spread_json(bench::spread(decode))},
              {"time_to_first_token_s", bench::spread_json(bench::spread(ttft))},
              {"prefill_s", bench::spread_json(bench::spread(prefill_s))},
              {"decode_s", bench::spread_json(bench::spread(decode_s))}}},
            {"runs", runs}};
}

// The element of one decode depth: decode figures only (its prefill is timed once, by the fill).
json depth_element(const Options& o, int64_t depth, bool prefix_kept, const json& runs) {
    std::vector<double> decode, decode_s;
    bool same = true;
    for (const json& r : runs) {
        same = same && r["output_token_ids"] == runs.front()["output_token_ids"];
        if (r["warmup"].get<bool>()) continue;
        decode.push_back(r["decode_tokens_per_s"].get<double>());
        decode_s.push_back(r["decode_s"].get<double>());
    }
    return {{"name", "decode at depth " + std::to_string(depth) + ", generate " + std::to_string(o.gen_tokens)},
            {"kind", "decode_depth"},
            {"depth_tokens", depth},
            {"gen_tokens_stated", o.gen_tokens},
            {"measured_runs", bench::spread(decode).n},
            {"warmup_runs_excluded", std::max(o.warmup, 1)},
            {"prefix",
             prefix_kept ? "kept: one prefill of the depth (the first warm-up), then each run truncates to depth - 1 "
                           "and re-decodes the last token untimed"
                         : "prefilled again every run (the session cannot truncate this model's cache)"},
            {"fill_prefill_tokens_per_s", runs.front()["prefill_tokens_per_s"]},
            // The truncated cache must give what the fill gave: the same greedy tokens every run.
            {"outputs_equal_fill", same},
            {"sampling", "greedy (temperature 0), end-of-generation ignored so every run generates the stated count"},
            {"spread",
             {{"decode_tokens_per_s", bench::spread_json(bench::spread(decode))},
              {"decode_s", bench::spread_json(bench::spread(decode_s))}}},
            {"runs", runs}};
}

// --decode-depths: per depth a fill (run_once, the first warm-up), then run_at_depth runs.
void depth_runs(const Options& o, strata::model& m, strata::session& session, strata::reports::memory_sampler& sampler,
                json& benchmarks) {
    for (int64_t depth : o.decode_depths) {
        const auto prompt = bench::filler_tokens(m, size_t(depth), true);
        json runs = json::array();
        bool prefix_kept = true;
        const int warm_n = std::max(o.warmup, 1);
        for (int i = 0; i < warm_n + o.repeat; ++i) {
            const bool warm = i < warm_n;
            std::string label = "depth " + std::to_string(depth) + ", " +
                                (warm ? "warm-up " + std::to_string(i + 1) : "repeat " + std::to_string(i - warm_n + 1));
            bench::RunResult r;
            if (i > 0 && prefix_kept) {
                try {
                    r = bench::run_at_depth(session, prompt, o.gen_tokens, &sampler);
                } catch (const strata::error& e) {
                    if (e.status() != STRATA_ERR_UNSUPPORTED) throw;
                    prefix_kept = false;
                }
            }
            if (i == 0 || !prefix_kept) r = bench::run_once(session, prompt, o.gen_tokens, &sampler);
            if (i == 0) label += " (fill: prefill of the depth)";
            runs.push_back(bench::run_json(r, label, warm));
            std::fprintf(stderr, "  depth %lld, %-34s decode %8.1f tok/s  (%lld + %lld tokens)\n", (long long)depth,
                         label.substr(label.find(", ") + 2).c_str(), runs.back()["decode_tokens_per_s"].get<double>(),
                         (long long)r.prompt_tokens, (long long)r.output_tokens);
        }
        benchmarks.push_back(depth_element(o, depth, prefix_kept, runs));
    }
}

int run(const Options& o) {
    cli::ProgressLines progress("strata-bench");  // hashing every shard for the report, a GPU upload
    strata::model m(o.model, progress.model_params());
    std::optional<strata::pipeline> pipe;
    std::optional<strata::session> session;
    report_sections::Deployment deployment =
        report_sections::open_session(m, o.pipeline, o.n_ctx, o.threads, pipe, session, o.device);
    strata::sampling_params greedy;
    greedy.temperature = 0;
    session->set_sampling(greedy);

    strata::reports::memory_sampler sampler(o.cadence_ms);
    sampler.start();
    json benchmarks = json::array();
    for (int64_t prompt_n : o.prompt_tokens) {
        const auto prompt = bench::filler_tokens(m, size_t(prompt_n), true);
        json runs = json::array();
        for (int i = 0; i < o.warmup + o.repeat; ++i) {
            const bool warm = i < o.warmup;
            const std::string label = warm ? "warm-up " + std::to_string(i + 1) : "repeat " + std::to_string(i - o.warmup + 1);
            const auto r = bench::run_once(*session, prompt, o.gen_tokens, &sampler);
            runs.push_back(bench::run_json(r, "prompt " + std::to_string(prompt_n) + ", " + label, warm));
            std::fprintf(stderr, "  prompt %lld, %-10s prefill %8.1f tok/s  decode %8.1f tok/s  (%lld + %lld tokens)\n",
                         (long long)prompt_n, label.c_str(), runs.back()["prefill_tokens_per_s"].get<double>(),
                         runs.back()["decode_tokens_per_s"].get<double>(), (long long)r.prompt_tokens,
                         (long long)r.output_tokens);
        }
        benchmarks.push_back(length_element(o, prompt_n, runs));
    }
    depth_runs(o, m, *session, sampler, benchmarks);
    std::optional<bench::ProbeResult> probe;
    if (o.probe_tokens > 0) {
        probe = bench::context_probe(m, *session, o.probe_tokens, o.probe_depths, session->n_ctx(), &sampler);
        std::fprintf(stderr, "  context probe: %s\n", probe->element["result"].get<std::string>().c_str());
        benchmarks.push_back(probe->element);
    }
    sampler.stop();
    std::optional<json> bound;
    if (o.device == STRATA_DEVICE_CUDA || o.decode_mode) {
        // Measured after the runs, on the device they ran on: the bound the decode rates face.
        double gbps = 0;
        std::string device_name = o.device == STRATA_DEVICE_CUDA ? "cuda" : "cpu";
        std::string why;
        if (o.device == STRATA_DEVICE_CUDA) {
            try {
                gbps = bench::measure_stream_read_gbps(&device_name);
            } catch (const std::exception& e) {
                why = e.what();
            }
        } else {
            why = "no streaming-read ceiling for the CPU here (bench/bench_decode measures the CPU's)";
        }
        bound = bench::decode_bound_element(bench::decode_weight_bytes(m), gbps, device_name, benchmarks);
        if (!why.empty()) (*bound)["stream_read_absent_reason"] = why;
        benchmarks.push_back(*bound);
    }
    if (pipe)
        benchmarks.push_back({{"name", "pipeline link counters"},
                              {"source", "strata_pipeline_stats_json after every run above"},
                              {"stats", json::parse(pipe->stats_json())}});

    // Only a probe that completed and recalled every fact verifies an input length.
    if (probe && probe->verified) deployment.deployment["largest_verified_input_tokens"] = o.probe_tokens;
    json sections = report_sections::base_sections(m, "strata-bench", deployment);
    sections["memory"].push_back(json::parse(sampler.json(pipe ? "head (this process)" : "this process")));
    sections["benchmarks"] = benchmarks;
    const std::string md = report_sections::write_report(sections, o.out);
    for (const json& b : benchmarks) {
        auto summary = [&](const char* key) {
            std::vector<double> v;
            for (const json& r : b["runs"])
                if (!r["warmup"].get<bool>()) v.push_back(r[key].get<double>());
            return bench::spread_text(bench::spread(v));
        };
        if (b.value("kind", "") == "decode_depth")
            std::printf("%s: decode tok/s %s\n", b["name"].get<std::string>().c_str(), summary("decode_tokens_per_s").c_str());
        if (b.value("kind", "") != "prompt_length") continue;
        std::printf("%s: prefill tok/s %s; decode tok/s %s\n", b["name"].get<std::string>().c_str(),
                    summary("prefill_tokens_per_s").c_str(), summary("decode_tokens_per_s").c_str());
    }
    if (probe) std::printf("context probe: %s\n", probe->element["result"].get<std::string>().c_str());
    if (bound) {
        const json& b = *bound;
        std::printf("decode bound: %llu weight bytes per token, streaming read %s GB/s -> %s tok/s\n",
                    (unsigned long long)b["weight_bytes_per_token"].get<uint64_t>(), b["stream_read_gb_per_s"].dump().c_str(),
                    b["bound_tokens_per_s"].dump().c_str());
        for (const json& p : b["per_prompt"])
            std::printf("decode bound: prompt %s: decode %.1f tok/s = %s%% of the bound; prefill %.1f tok/s\n",
                        p["prompt_tokens"].dump().c_str(), p["decode_tokens_per_s_median"].get<double>(),
                        p["percent_of_bound"].is_number() ? std::to_string(p["percent_of_bound"].get<double>()).c_str() : "-",
                        p["prefill_tokens_per_s_median"].get<double>());
    }
    std::fprintf(stderr, "report: %s and %s\n", o.out.c_str(), md.c_str());
    return 0;
}

}  // namespace

int model_bench(int argc, char** argv, bool decode_mode) {
    const Options o =
        cli::parse_or_exit(decode_mode ? "strata-bench decode" : "strata-bench", kUsage,
                           [&] { return parse_args(argc, argv, decode_mode); });
    try {
        return run(o);
    } catch (const strata::error& e) {
        std::cerr << "strata-bench: " << e.status_name() << ": " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "strata-bench: " << e.what() << "\n";
        return 1;
    }
}

int run_model_bench(int argc, char** argv) { return model_bench(argc, argv, false); }
int bench_decode_main(int argc, char** argv) { return model_bench(argc, argv, true); }
