// strata-bench pipeline: one model run as one local session (1 stage) and as a pipeline of N stages
// (this process as the head, N-1 strata-worker processes on loopback, started and stopped here).
//
//   strata-bench pipeline --model SHARD [SHARD...] [--stages 3] [--prompt-tokens N] [--gen-tokens N]
//                         [--repeat N] [--threads-per-stage N] [--n-batch N] [--layers A:B,C:D,...]
//                         [--worker-binary PATH] [-o REPORT.json]
//
// Measures, each repetition from a reset sequence with the same synthetic prompt and greedy
// sampling: prefill and decode tokens per second of both; for the pipeline the per-hop round-trip
// latency and the bytes on the wire per generated token (both from strata_pipeline_stats_json), and
// the prefill overlap: the pipeline's prefill time against the sum of the stages' own compute for
// the same work (the local session running the same micro-batches one after another, with the
// threads of one stage; and the stages' own compute times when the stats report them). Reports
// min/median/max over the repetitions with every sample kept; writes REPORT.json and REPORT.md and
// prints the table. Uses only strata.h / strata.hpp.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cli_args.hpp"
#include "strata/strata.hpp"

extern char** environ;

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

const char* kUsage =
    "usage: strata-bench pipeline --model SHARD [SHARD...] [--stages 3] [--prompt-tokens 128]\n"
    "                             [--gen-tokens 64] [--repeat 3] [--threads-per-stage 1] [--n-batch 32]\n"
    "                             [--layers A:B,C:D,...] [--ctx N] [--wire f16|bf16|f32]\n"
    "                             [--worker-binary PATH] [--transport tcp[,rdma]] [-o REPORT.json]\n"
    "Runs the model as one local session and as a pipeline of --stages stages (this process as the\n"
    "head, --stages - 1 strata-worker processes on 127.0.0.1, started here: by default the\n"
    "strata-worker next to strata-bench). Reports prefill and decode tok/s of both (min/median/max\n"
    "over --repeat runs), per-hop latency and bytes on the wire per token, and the prefill overlap.\n"
    "--transport tcp,rdma runs the pipeline once per transport (default tcp) and puts them side by side.\n"
    "-o writes REPORT.json and REPORT.md (same name, .md); the table is printed either way.\n";

struct Options {
    std::vector<std::string> model;
    int stages = 3;
    int prompt_tokens = 128;
    int gen_tokens = 64;
    int repeat = 3;
    int threads = 1;
    int n_batch = 32;
    int32_t wire = STRATA_WIRE_F16;  // the pipeline's default
    int64_t n_ctx = 0;  // 0: prompt + gen + 8
    std::string layers;
    std::string worker_binary;
    std::string out;
    int heartbeat_ms = 1000;
    int peer_timeout_ms = 30000;
    std::vector<std::string> transports{"tcp"};  // --transport tcp,rdma: one pipeline run per transport
    std::vector<std::string> argv;
};

int parse_int(const std::string& flag, const std::string& text, int min) {
    if (const auto v = cli::to_number<long long>(text); v && *v >= min && *v <= (1LL << 30)) return int(*v);
    throw cli::usage_error(flag + " needs an integer >= " + std::to_string(min) + ", got '" + text + "'");
}

Options parse_args(int argc, char** argv) {
    Options o;
    o.argv.assign(argv, argv + argc);
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        if (a == "--model" || a == "-m") {
            while (i + 1 < argc && argv[i + 1][0] != '-') o.model.push_back(argv[++i]);
            if (o.model.empty()) throw cli::usage_error("--model needs at least one shard");
        } else if (a == "--stages") o.stages = parse_int(a, value(), 2);
        else if (a == "--prompt-tokens") o.prompt_tokens = parse_int(a, value(), 2);
        else if (a == "--gen-tokens") o.gen_tokens = parse_int(a, value(), 1);
        else if (a == "--repeat") o.repeat = parse_int(a, value(), 1);
        else if (a == "--threads-per-stage") o.threads = parse_int(a, value(), 1);
        else if (a == "--n-batch") o.n_batch = parse_int(a, value(), 1);
        else if (a == "--ctx") o.n_ctx = parse_int(a, value(), 1);
        else if (a == "--layers") o.layers = value();
        else if (a == "--wire") o.wire = cli::wire_dtype(value());
        else if (a == "--worker-binary") o.worker_binary = value();
        else if (a == "-o" || a == "--output") o.out = value();
        else if (a == "--heartbeat-ms") o.heartbeat_ms = parse_int(a, value(), 1);
        else if (a == "--peer-timeout-ms") o.peer_timeout_ms = parse_int(a, value(), 1);
        else if (a == "--transport") {
            o.transports.clear();
            std::string list = value();
            for (size_t at = 0; at <= list.size();) {
                const size_t comma = std::min(list.find(',', at), list.size());
                const std::string t = list.substr(at, comma - at);
                if (t != "tcp" && t != "rdma") throw cli::usage_error("--transport takes tcp and rdma, got '" + t + "'");
                o.transports.push_back(t);
                at = comma + 1;
            }
        }
        else if (a == "-h" || a == "--help") cli::help(kUsage);
        else throw cli::usage_error("unknown argument " + a);
    }
    if (o.model.empty()) throw cli::usage_error("--model SHARD is required");
    if (o.n_ctx == 0) o.n_ctx = int64_t(o.prompt_tokens) + o.gen_tokens + 8;
    if (o.n_ctx < int64_t(o.prompt_tokens) + o.gen_tokens + 1)
        throw cli::usage_error("--ctx " + std::to_string(o.n_ctx) + " cannot hold the prompt and the generated tokens");
    return o;
}

std::string self_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : exe.parent_path().string();
}

std::string loadavg() {
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    in >> a >> b >> c;
    return a.empty() ? "unknown" : a + " " + b + " " + c;
}

std::string read_first_line(const char* path, const std::string& prefix = "") {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
        if (prefix.empty() || line.rfind(prefix, 0) == 0) return prefix.empty() ? line : line.substr(line.find(':') + 2);
    return "unknown";
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

// --- worker processes -----------------------------------------------------------------------------

class WorkerProcess {
public:
    WorkerProcess(const std::string& binary, const Options& o, const std::string& log_path, const std::string& transport)
        : log_path_(log_path) {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
        std::vector<std::string> args = {binary, "--listen", "127.0.0.1:0", "--threads", std::to_string(o.threads),
                                         "--heartbeat-ms", std::to_string(o.heartbeat_ms), "--peer-timeout-ms",
                                         std::to_string(o.peer_timeout_ms), "--model"};
        args.insert(args.end(), o.model.begin(), o.model.end());
        args.insert(args.end(), {"--transport", transport});
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addopen(&fa, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int rc = posix_spawn(&pid_, binary.c_str(), &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
        if (rc != 0) {
            close(fds[0]);
            pid_ = -1;
            throw std::runtime_error("cannot start " + binary + ": " + std::strerror(rc));
        }
        out_fd_ = fds[0];
        address_ = wait_listening(120);
        // Keep draining stdout so that the worker never blocks on a full pipe.
        drain_ = std::thread([fd = out_fd_] {
            char buf[4096];
            while (read(fd, buf, sizeof buf) > 0) {
            }
        });
    }
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;
    ~WorkerProcess() { stop(); }

    const std::string& address() const { return address_; }
    const std::string& log_path() const { return log_path_; }

    void stop() {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            int status = 0;
            bool reaped = false;
            for (int i = 0; i < 100 && !reaped; ++i) {
                if (waitpid(pid_, &status, WNOHANG) == pid_) reaped = true;
                else std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            if (!reaped) {
                kill(pid_, SIGKILL);
                waitpid(pid_, &status, 0);
            }
            pid_ = -1;
        }
        if (drain_.joinable()) drain_.join();
        if (out_fd_ >= 0) {
            close(out_fd_);
            out_fd_ = -1;
        }
    }

private:
    std::string wait_listening(int timeout_s) {
        std::string buffered;
        const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
        for (;;) {
            const size_t nl = buffered.find('\n');
            if (nl != std::string::npos) {
                const std::string line = buffered.substr(0, nl);
                buffered.erase(0, nl + 1);
                const size_t at = line.find("listening on ");
                if (at != std::string::npos) {
                    std::string addr = line.substr(at + 13);
                    while (!addr.empty() && std::isspace(static_cast<unsigned char>(addr.back()))) addr.pop_back();
                    return addr;
                }
                continue;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
            if (left <= 0) throw std::runtime_error("strata-worker printed no 'listening on' line within " +
                                                    std::to_string(timeout_s) + " s (log: " + log_path_ + ")");
            pollfd p{out_fd_, POLLIN, 0};
            if (poll(&p, 1, int(std::min<long long>(left, 1000))) <= 0) continue;
            char buf[512];
            const ssize_t n = read(out_fd_, buf, sizeof buf);
            if (n <= 0) throw std::runtime_error("strata-worker exited before listening (log: " + log_path_ + ")");
            buffered.append(buf, size_t(n));
        }
    }

    pid_t pid_ = -1;
    int out_fd_ = -1;
    std::string address_, log_path_;
    std::thread drain_;
};

// --- measurements ---------------------------------------------------------------------------------

struct Run {
    double prefill_s = 0;  // the prompt's decode
    double decode_s = 0;   // gen tokens through strata_session_generate (decode_and_sample: one round trip each)
    double steps_s = 0;    // gen tokens through strata_session_sample + strata_session_decode calls
    double chunked_prefill_s = 0;  // local: the prompt in micro-batches of n_batch, one after another
    std::vector<int32_t> tokens, step_tokens;
    double wire_prompt = 0, wire_generate = 0, wire_steps = 0;  // bytes per token (pipelines)
    json prefill_stats_delta;
};

void check(strata_status s) {
    if (s != STRATA_OK) throw strata::error(s, strata_last_error());
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Prefill `prompt` from an empty sequence, in chunks of `chunk` tokens (0: at once).
void prefill(strata_session* s, const std::vector<int32_t>& prompt, int chunk) {
    check(strata_session_reset(s));
    if (chunk <= 0) check(strata_session_decode(s, prompt.data(), prompt.size(), 0));
    else
        for (size_t i = 0; i < prompt.size(); i += size_t(chunk))
            check(strata_session_decode(s, prompt.data() + i, std::min(prompt.size() - i, size_t(chunk)), 0));
}

// `gen` greedy tokens after what the session holds, through strata_session_generate (empty prompt).
std::vector<int32_t> generate(strata_session* s, int gen) {
    std::vector<int32_t> tokens;
    strata_generate_params g;
    strata_generate_default_params(&g);
    g.max_tokens = gen;
    g.add_special = 0;
    g.stop_at_end_of_generation = 0;
    g.user_data = &tokens;
    g.on_token = [](int32_t token, const char*, size_t, void* user) -> int {
        static_cast<std::vector<int32_t>*>(user)->push_back(token);
        return 0;
    };
    check(strata_session_generate(s, "", 0, &g, nullptr));
    return tokens;
}

// `gen` greedy tokens through separate sample and decode calls (decode keeps the last row's logits:
// on a pipeline they travel to the head every step).
std::vector<int32_t> steps(strata_session* s, int gen) {
    std::vector<int32_t> tokens;
    for (int i = 0; i < gen; ++i) {
        int32_t t = 0;
        check(strata_session_sample(s, &t));
        check(strata_session_decode(s, &t, 1, 0));
        tokens.push_back(t);
    }
    return tokens;
}

void set_greedy(strata_session* s) {
    strata_sampling_params p;
    strata_sampling_default_params(&p);
    p.temperature = 0;
    check(strata_session_set_sampling(s, &p));
}

json summary(std::vector<double> v) {
    json j;
    j["samples"] = v;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    j["min"] = n ? v.front() : 0.0;
    j["median"] = n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0.0;
    j["max"] = n ? v.back() : 0.0;
    return j;
}

// Seconds, the derived rate (tokens / seconds) and ms per token of each repetition, summarised.
json phase(const std::vector<Run>& runs, double Run::*field, int64_t tokens) {
    std::vector<double> secs, rates, ms;
    for (const auto& r : runs) {
        const double s = r.*field;
        secs.push_back(s);
        rates.push_back(s > 0 ? double(tokens) / s : 0.0);
        ms.push_back(s * 1e3 / double(tokens));
    }
    json j;
    j["tokens"] = tokens;
    j["seconds"] = summary(secs);
    j["tokens_per_second"] = summary(rates);
    j["ms_per_token"] = summary(ms);
    return j;
}

std::string text_of(strata_status (*fn)(const strata_pipeline*, char*, size_t, size_t*), const strata_pipeline* p) {
    size_t needed = 0;
    strata_status s = fn(p, nullptr, 0, &needed);
    if (s != STRATA_ERR_BUFFER_TOO_SMALL) check(s);
    std::string text(needed, '\0');
    check(fn(p, text.data(), text.size(), &needed));
    text.resize(needed ? needed - 1 : 0);
    return text;
}

json parse_or_text(const std::string& text) {
    try {
        return json::parse(text);
    } catch (const std::exception&) {
        return json(text);
    }
}

std::string lower(std::string s) {
    for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Bytes moved, summed over every link: every number whose key names bytes sent or received.
double wire_bytes(const json& j, const std::string& key = "") {
    double sum = 0;
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) sum += wire_bytes(it.value(), lower(it.key()));
    } else if (j.is_array()) {
        for (const auto& v : j) sum += wire_bytes(v, key);
    } else if (j.is_number()) {
        const bool bytes = key.find("bytes") != std::string::npos;
        const bool dir = key.find("sent") != std::string::npos || key.find("received") != std::string::npos ||
                         key.find("recv") != std::string::npos || key.find("_tx") != std::string::npos ||
                         key.find("_rx") != std::string::npos || key.find("_in") != std::string::npos ||
                         key.find("_out") != std::string::npos;
        if (bytes && dir) sum += j.get<double>();
    }
    return sum;
}

// Latency summaries (objects with a mean, under a key naming latency or round trips), with where
// they were found.
void latencies(const json& j, const std::string& path, bool under_latency, json& out) {
    if (j.is_object()) {
        const bool has_mean = j.contains("mean") || j.contains("mean_us");
        if (has_mean && under_latency) {
            json e;
            e["where"] = path;
            for (const char* k : {"count", "mean", "mean_us", "min", "min_us", "max", "max_us"})
                if (j.contains(k)) e[k] = j[k];
            out.push_back(e);
            return;
        }
        // A link entry naming its stage and address is labelled by them rather than by its index.
        std::string here = path;
        if (j.contains("stage") && j.contains("address") && j["address"].is_string())
            here = "stage " + j["stage"].dump() + " (" + j["address"].get<std::string>() + ")";
        for (auto it = j.begin(); it != j.end(); ++it) {
            const std::string k = lower(it.key());
            const bool lat = under_latency || k.find("latency") != std::string::npos ||
                             k.find("rtt") != std::string::npos || k.find("round") != std::string::npos;
            latencies(it.value(), here + " " + it.key(), lat, out);
        }
    } else if (j.is_array()) {
        for (size_t i = 0; i < j.size(); ++i) latencies(j[i], path + "/" + std::to_string(i), under_latency, out);
    }
}

// Compute-time counters in the stats (keys naming compute with a time unit), with where they are:
// recorded beside the overlap figures, never summed into them (they may cover only some stages).
void compute_counters(const json& j, const std::string& path, json& out) {
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) {
            const std::string k = lower(it.key());
            const json& v = it.value();
            if (v.is_number() && k.find("compute") != std::string::npos) {
                double scale = 0;
                if (k.ends_with("_us")) scale = 1e-6;
                else if (k.ends_with("_ms")) scale = 1e-3;
                else if (k.ends_with("_ns")) scale = 1e-9;
                else if (k.ends_with("_s") || k.ends_with("seconds")) scale = 1;
                if (scale > 0) out.push_back({{"where", path + "/" + it.key()}, {"seconds", v.get<double>() * scale}});
            } else {
                compute_counters(v, path + "/" + it.key(), out);
            }
        }
    } else if (j.is_array()) {
        for (size_t i = 0; i < j.size(); ++i) compute_counters(j[i], path + "/" + std::to_string(i), out);
    }
}

// b - a for every number present in both at the same place (objects by key, arrays by index).
json numeric_delta(const json& b, const json& a) {
    if (b.is_object() && a.is_object()) {
        json out = json::object();
        for (auto it = b.begin(); it != b.end(); ++it)
            if (a.contains(it.key())) out[it.key()] = numeric_delta(it.value(), a[it.key()]);
        return out;
    }
    if (b.is_array() && a.is_array()) {
        json out = json::array();
        for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) out.push_back(numeric_delta(b[i], a[i]));
        return out;
    }
    if (b.is_number() && a.is_number()) return b.get<double>() - a.get<double>();
    return b;
}

std::string fmt(double v, int prec = 1) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", prec, v);
    return b;
}

std::string mmm(const json& s, int prec = 1) {
    return fmt(s["min"].get<double>(), prec) + " / " + fmt(s["median"].get<double>(), prec) + " / " +
           fmt(s["max"].get<double>(), prec);
}

std::string markdown(const json& r) {
    std::ostringstream md;
    const auto& L = r["local"];
    const auto& P = r["pipeline"];
    md << "# strata-bench pipeline\n\n";
    md << "- model: `" << r["model"]["paths"][0].get<std::string>() << "` (" << r["model"]["architecture"].get<std::string>()
       << ", " << r["model"]["n_layer"] << " layers, identity `" << r["model"]["identity"].get<std::string>().substr(0, 16)
       << "…`)\n";
    md << "- command: `" << r["command"].get<std::string>() << "`\n";
    md << "- machine: " << r["machine"]["cpu"].get<std::string>() << ", " << r["machine"]["hardware_threads"]
       << " hardware threads, load average (1/5/15 min) " << r["machine"]["loadavg_before"].get<std::string>() << " before / "
       << r["machine"]["loadavg_after"].get<std::string>() << " after\n";
    md << "- stages: " << P["stages"] << " (layers " << P["layers"].get<std::string>() << "), "
       << r["config"]["threads_per_stage"] << " thread(s) per stage, n_batch " << r["config"]["n_batch"] << ", "
       << r["config"]["repeat"] << " repetitions; hidden states on the wire as "
       << r["config"]["wire_dtype"].get<std::string>() << "; greedy tokens identical to the local session: "
       << (r["tokens_identical"].get<bool>() ? "yes" : "NO")
       << (r["config"]["wire_dtype"] == "f32" ? "" : " (f16/bf16 round the hidden states: tokens may differ; f32 is exact)")
       << "\n\n";
    md << "| figure (min / median / max) | 1 stage (local session) | " << P["stages"] << " stages |\n";
    md << "|---|---|---|\n";
    md << "| prefill tok/s (" << L["prefill"]["tokens"] << " tokens) | " << mmm(L["prefill"]["tokens_per_second"])
       << " | " << mmm(P["prefill"]["tokens_per_second"]) << " |\n";
    md << "| decode tok/s (" << L["decode"]["tokens"] << " tokens) | " << mmm(L["decode"]["tokens_per_second"])
       << " | " << mmm(P["decode"]["tokens_per_second"]) << " |\n";
    md << "| decode ms/token | " << mmm(L["decode"]["ms_per_token"], 2) << " | " << mmm(P["decode"]["ms_per_token"], 2)
       << " |\n";
    md << "| decode ms/token, sample + decode calls | " << mmm(L["decode_sample_calls"]["ms_per_token"], 2) << " | "
       << mmm(P["decode_sample_calls"]["ms_per_token"], 2) << " |\n";
    md << "| bytes on the wire per generated token | – | " << fmt(P["wire"]["bytes_per_generated_token"].get<double>(), 0)
       << " |\n";
    md << "| bytes on the wire per token, sample + decode calls | – | "
       << fmt(P["wire"]["bytes_per_generated_token_sample_calls"].get<double>(), 0) << " |\n";
    md << "| bytes on the wire per prompt token | – | " << fmt(P["wire"]["bytes_per_prompt_token"].get<double>(), 0)
       << " |\n";
    for (const auto& h : P["hop_latency"]) {
        md << "| latency " << h["where"].get<std::string>() << " (µs, mean";
        std::string vals = "";
        for (const char* k : {"mean_us", "mean"})
            if (h.contains(k)) vals = fmt(h[k].get<double>(), 0);
        for (const char* k : {"min_us", "min"})
            if (h.contains(k)) {
                md << " / min";
                vals += " / " + fmt(h[k].get<double>(), 0);
                break;
            }
        for (const char* k : {"max_us", "max"})
            if (h.contains(k)) {
                md << " / max";
                vals += " / " + fmt(h[k].get<double>(), 0);
                break;
            }
        md << ") | – | " << vals << " |\n";
    }
    const auto& ov = r["prefill_overlap"];
    md << "\nPrefill overlap: the pipeline prefilled in " << fmt(ov["pipeline_prefill_seconds"].get<double>(), 4)
       << " s (median); the stages' own compute for the same micro-batches, run one after another by the local "
          "session with one stage's threads, takes "
       << fmt(ov["stages_compute_sum_seconds"].get<double>(), 4) << " s (median): ratio "
       << fmt(ov["ratio"].get<double>(), 3) << " (below 1: the stages overlapped).";
    if (ov.contains("reported_compute_counters"))
        for (const auto& c : ov["reported_compute_counters"])
            md << " Reported " << c["where"].get<std::string>() << ": " << fmt(c["seconds"].get<double>(), 4)
               << " s over the last prefill.";
    md << " The whole prompt in one local batch: " << fmt(ov["local_whole_prompt_seconds"].get<double>(), 4) << " s.\n";
    if (!ov["note"].get<std::string>().empty()) md << "\n" << ov["note"].get<std::string>() << "\n";
    // Every transport run, side by side: the same model, stages, prompt and tokens.
    if (r.contains("pipelines") && !r["pipelines"].empty()) {
        md << "\n\n## Transports side by side\n\n";
        md << "| transport | prefill tok/s | decode tok/s | one-token hop round trip, mean µs (per stage) | "
              "wire bytes per generated token | per prompt token |\n|---|---|---|---|---|---|\n";
        for (const auto& p : r["pipelines"]) {
            std::string hops;
            for (const auto& h : p["hop_latency"])
                if (h.contains("where") && h["where"].get<std::string>().find("single_token") != std::string::npos &&
                    h.contains("mean_us"))
                    hops += (hops.empty() ? "" : ", ") + fmt(h["mean_us"].get<double>(), 1);
            md << "| " << p["transport"].get<std::string>() << " | " << mmm(p["prefill"]["tokens_per_second"]) << " | "
               << mmm(p["decode"]["tokens_per_second"]) << " | " << (hops.empty() ? "n/a" : hops) << " | "
               << fmt(p["wire"]["bytes_per_generated_token"].get<double>(), 1) << " | "
               << fmt(p["wire"]["bytes_per_prompt_token"].get<double>(), 1) << " |\n";
        }
        md << "\nEach transport's stages as the plan reports them: `pipelines[i].plan.stages[k].socket` (tcp) or "
              "`.rdma` (UCX: settings given, lanes chosen).\n";
    }
    return md.str();
}

}  // namespace

int bench_pipeline_main(int argc, char** argv) {
    const Options o = cli::parse_or_exit("strata-bench pipeline", kUsage, [&] { return parse_args(argc, argv); });
    std::string command = "strata-bench";
    for (const auto& a : o.argv) command += " " + a;
    const std::string worker_binary = o.worker_binary.empty() ? self_dir() + "/strata-worker" : o.worker_binary;
    if (access(worker_binary.c_str(), X_OK) != 0) {
        std::cerr << "strata-bench pipeline: no strata-worker at " << worker_binary << " (--worker-binary PATH)\n";
        return 2;
    }
    std::vector<std::unique_ptr<WorkerProcess>> workers;
    try {
        json report;
        report["tool"] = "strata-bench pipeline";
        report["started_utc"] = utc_now();
        report["command"] = command;
        report["library_version"] = strata_version();
        report["machine"] = {{"cpu", read_first_line("/proc/cpuinfo", "model name")},
                             {"hardware_threads", std::thread::hardware_concurrency()},
                             {"loadavg_before", loadavg()}};

        strata::model m(o.model);
        const std::string arch(m.get_string("general.architecture"));
        const int n_layer = int(m.get_uint(arch + ".block_count"));
        const auto vocab = m.vocab();
        json model;
        model["paths"] = o.model;
        model["architecture"] = arch;
        model["n_layer"] = n_layer;
        model["n_vocab"] = vocab.n_vocab;
        model["identity"] = m.identity();
        json shards = json::array();
        for (size_t i = 0; i < m.shard_count(); ++i) {
            char hex[65];
            check(strata_model_shard_sha256(m.get(), i, hex));
            shards.push_back({{"path", m.shard(i).path}, {"bytes", m.shard(i).size}, {"sha256", hex}});
        }
        model["shards"] = shards;
        report["model"] = model;
        if (o.stages > n_layer) throw std::runtime_error("--stages " + std::to_string(o.stages) + " exceeds the " +
                                                         std::to_string(n_layer) + " layers");

        // A fixed synthetic prompt: BOS, then ids spread over the vocabulary.
        std::vector<int32_t> prompt;
        prompt.push_back(vocab.bos >= 0 ? vocab.bos : 1);
        for (int i = 1; i < o.prompt_tokens; ++i) prompt.push_back(int32_t(3 + (int64_t(i) * 7919) % (vocab.n_vocab - 3)));
        report["config"] = {{"stages", o.stages},        {"prompt_tokens", o.prompt_tokens},
                            {"gen_tokens", o.gen_tokens}, {"repeat", o.repeat},
                            {"threads_per_stage", o.threads}, {"n_batch", o.n_batch},
                            {"wire_dtype", o.wire == STRATA_WIRE_F32 ? "f32" : o.wire == STRATA_WIRE_BF16 ? "bf16" : "f16"},
                            {"n_ctx", o.n_ctx},          {"sampling", "greedy"},
                            {"heartbeat_ms", o.heartbeat_ms}, {"peer_timeout_ms", o.peer_timeout_ms},
                            {"worker_binary", worker_binary}};

        // 1 stage: a local session with one stage's threads.
        std::fprintf(stderr, "[bench] local session: %d repetitions\n", o.repeat);
        std::vector<Run> local_runs;
        {
            strata::session_params sp;
            sp.n_ctx = o.n_ctx;
            sp.n_threads = o.threads;
            strata::session s(m, sp);
            set_greedy(s.get());
            prefill(s.get(), prompt, 0);  // warm-up: page faults, threads
            generate(s.get(), std::min(o.gen_tokens, 4));
            for (int i = 0; i < o.repeat; ++i) {
                Run r;
                auto t = Clock::now();
                prefill(s.get(), prompt, 0);
                r.prefill_s = seconds_since(t);
                t = Clock::now();
                r.tokens = generate(s.get(), o.gen_tokens);
                r.decode_s = seconds_since(t);
                prefill(s.get(), prompt, 0);
                t = Clock::now();
                r.step_tokens = steps(s.get(), o.gen_tokens);
                r.steps_s = seconds_since(t);
                // The stages' own compute for the pipeline's prefill: the same micro-batches, serially.
                t = Clock::now();
                prefill(s.get(), prompt, o.n_batch);
                r.chunked_prefill_s = seconds_since(t);
                local_runs.push_back(std::move(r));
            }
        }

        json local;
        local["prefill"] = phase(local_runs, &Run::prefill_s, o.prompt_tokens);
        local["decode"] = phase(local_runs, &Run::decode_s, o.gen_tokens);
        local["decode"]["method"] = "strata_session_generate after the prefill (empty prompt), greedy";
        local["decode_sample_calls"] = phase(local_runs, &Run::steps_s, o.gen_tokens);
        local["decode_sample_calls"]["method"] = "strata_session_sample + strata_session_decode per token, greedy";
        local["prefill_in_micro_batches"] = phase(local_runs, &Run::chunked_prefill_s, o.prompt_tokens);
        report["local"] = local;

        bool same = true;
        report["pipelines"] = json::array();
        json first_prefill_delta;  // the first transport's last prefill, for the overlap counters
        for (const std::string& transport : o.transports) {
            // N stages: this process as the head, N-1 workers.
            const std::string log_dir = o.out.empty() ? fs::temp_directory_path().string() : fs::path(o.out).parent_path().string();
            std::vector<std::string> addresses;
            json worker_logs = json::array();
            for (int i = 1; i < o.stages; ++i) {
                const std::string log = (fs::path(log_dir.empty() ? "." : log_dir) /
                                         ("strata-bench-worker-" + std::to_string(getpid()) + "-" + transport + "-" + std::to_string(i) + ".log"))
                                            .string();
                workers.push_back(std::make_unique<WorkerProcess>(worker_binary, o, log, transport));
                addresses.push_back(workers.back()->address());
                worker_logs.push_back(log);
                std::fprintf(stderr, "[bench] worker %d listening on %s (log %s)\n", i, addresses.back().c_str(), log.c_str());
            }
            std::vector<const char*> addr_c;
            for (const auto& a : addresses) addr_c.push_back(a.c_str());
            strata_pipeline_params pp;
            strata_pipeline_default_params(&pp);
            pp.workers = addr_c.data();
            pp.n_workers = addr_c.size();
            pp.layers = o.layers.empty() ? nullptr : o.layers.c_str();
            pp.n_ctx = o.n_ctx;
            pp.n_threads = o.threads;
            pp.n_batch = o.n_batch;
            pp.wire_dtype = o.wire;
            pp.heartbeat_ms = o.heartbeat_ms;
            pp.peer_timeout_ms = o.peer_timeout_ms;
            pp.connect_timeout_ms = 30000;
            pp.transport = transport.c_str();
            strata_pipeline* pipe = nullptr;
            check(strata_pipeline_create(m.get(), &pp, &pipe));
            std::unique_ptr<strata_pipeline, void (*)(strata_pipeline*)> pipe_owner(pipe, strata_pipeline_free);
            strata_session* ps = nullptr;
            check(strata_pipeline_session(pipe, &ps));
            std::unique_ptr<strata_session, void (*)(strata_session*)> ps_owner(ps, strata_session_free);
            const json plan = parse_or_text(text_of(strata_pipeline_plan_json, pipe));
            auto stats = [&] { return parse_or_text(text_of(strata_pipeline_stats_json, pipe)); };
            set_greedy(ps);
            std::fprintf(stderr, "[bench] pipeline of %d stages over %s: %d repetitions\n", o.stages, transport.c_str(), o.repeat);
            prefill(ps, prompt, 0);  // warm-up
            generate(ps, std::min(o.gen_tokens, 4));
            std::vector<Run> pipe_runs;
            json stats_last;
            for (int i = 0; i < o.repeat; ++i) {
                Run r;
                const json s0 = stats();
                auto t = Clock::now();
                prefill(ps, prompt, 0);
                r.prefill_s = seconds_since(t);
                const json s1 = stats();
                t = Clock::now();
                r.tokens = generate(ps, o.gen_tokens);
                r.decode_s = seconds_since(t);
                const json s2 = stats();
                prefill(ps, prompt, 0);
                const json s3 = stats();
                t = Clock::now();
                r.step_tokens = steps(ps, o.gen_tokens);
                r.steps_s = seconds_since(t);
                const json s4 = stats();
                r.wire_prompt = (wire_bytes(s1) - wire_bytes(s0)) / double(prompt.size());
                r.wire_generate = (wire_bytes(s2) - wire_bytes(s1)) / double(o.gen_tokens);
                r.wire_steps = (wire_bytes(s4) - wire_bytes(s3)) / double(o.gen_tokens);
                r.prefill_stats_delta = numeric_delta(s1, s0);
                stats_last = s4;
                pipe_runs.push_back(std::move(r));
            }


            json pj;
            pj["stages"] = o.stages;
            pj["workers"] = addresses;
            pj["worker_logs"] = worker_logs;
            std::string layers_text = o.layers;
            if (layers_text.empty()) {
                layers_text = "planned";
                try {
                    const json& st = plan.contains("stages") ? plan["stages"] : plan;
                    std::string t;
                    for (const auto& s : st) {
                        if (s.contains("layer_begin") && s.contains("layer_end"))
                            t += (t.empty() ? "" : ",") + std::to_string(s["layer_begin"].get<int>()) + ":" +
                                 std::to_string(s["layer_end"].get<int>());
                        else if (s.contains("layers") && s["layers"].is_string())
                            t += (t.empty() ? "" : ",") + s["layers"].get<std::string>();
                        else if (s.contains("layers") && s["layers"].is_array() && s["layers"].size() == 2)
                            t += (t.empty() ? "" : ",") + std::to_string(s["layers"][0].get<int>()) + ":" +
                                 std::to_string(s["layers"][1].get<int>());
                    }
                    if (!t.empty()) layers_text = t + " (planned)";
                } catch (const std::exception&) {
                }
            }
            pj["layers"] = layers_text;
            pj["plan"] = plan;
            pj["prefill"] = phase(pipe_runs, &Run::prefill_s, o.prompt_tokens);
            pj["decode"] = phase(pipe_runs, &Run::decode_s, o.gen_tokens);
            pj["decode"]["method"] = local["decode"]["method"];
            pj["decode_sample_calls"] = phase(pipe_runs, &Run::steps_s, o.gen_tokens);
            pj["decode_sample_calls"]["method"] = local["decode_sample_calls"]["method"];
            std::vector<double> wp, wg, ws;
            for (const auto& r : pipe_runs) {
                wp.push_back(r.wire_prompt);
                wg.push_back(r.wire_generate);
                ws.push_back(r.wire_steps);
            }
            pj["wire"] = {{"method", "sum of the byte counters of every link in strata_pipeline_stats_json, read before "
                                     "and after each phase, divided by the phase's tokens (heartbeats included)"},
                          {"bytes_per_generated_token", summary(wg)["median"]},
                          {"bytes_per_generated_token_sample_calls", summary(ws)["median"]},
                          {"bytes_per_prompt_token", summary(wp)["median"]},
                          {"per_repetition_generated", wg},
                          {"per_repetition_generated_sample_calls", ws},
                          {"per_repetition_prompt", wp}};
            json hops = json::array();
            latencies(stats_last, "", false, hops);
            pj["hop_latency"] = hops;
            pj["stats_at_end"] = stats_last;
            pj["transport"] = transport;
            for (const auto& r : pipe_runs)
                same = same && r.tokens == local_runs.front().tokens && r.step_tokens == local_runs.front().tokens;
            // The first transport's run stays under "pipeline" (what the overlap below reads); every
            // run, the first included, is in "pipelines", for the side-by-side table.
            if (!report.contains("pipeline")) {
                report["pipeline"] = pj;
                first_prefill_delta = pipe_runs.back().prefill_stats_delta;
            }
            report["pipelines"].push_back(pj);
            ps_owner.reset();
            pipe_owner.reset();
            for (auto& w : workers) w->stop();
            workers.clear();
        }
        for (const auto& r : local_runs) same = same && r.tokens == r.step_tokens;
        report["tokens_identical"] = same;

        json ov;
        const double pipe_prefill = report["pipeline"]["prefill"]["seconds"]["median"].get<double>();
        const double chunked = report["local"]["prefill_in_micro_batches"]["seconds"]["median"].get<double>();
        ov["pipeline_prefill_seconds"] = pipe_prefill;
        ov["stages_compute_sum_seconds"] = chunked;
        ov["stages_compute_method"] =
            "the local session running the same micro-batches of n_batch tokens one after another with one "
            "stage's threads: the work of every stage, serialized, without the network";
        ov["ratio"] = chunked > 0 ? pipe_prefill / chunked : 0.0;
        ov["local_whole_prompt_seconds"] = report["local"]["prefill"]["seconds"]["median"];
        // Compute-time counters the stats report for the last repetition's prefill (read around it).
        json counters = json::array();
        compute_counters(first_prefill_delta, "", counters);
        if (!counters.empty()) {
            ov["reported_compute_counters"] = counters;
            ov["reported_compute_note"] =
                "compute-time counters of strata_pipeline_stats_json, difference over the last repetition's prefill";
        }
        const unsigned hw = std::thread::hardware_concurrency();
        ov["note"] = (hw > 0 && unsigned(o.stages * o.threads) > hw)
                         ? "The stages need " + std::to_string(o.stages * o.threads) + " threads but the machine has " +
                               std::to_string(hw) + " hardware threads: they cannot all compute at once."
                         : std::string();
        report["prefill_overlap"] = ov;
        report["machine"]["loadavg_after"] = loadavg();
        report["finished_utc"] = utc_now();

        const std::string md = markdown(report);
        std::cout << md;
        if (!o.out.empty()) {
            std::ofstream(o.out) << report.dump(2) << "\n";
            fs::path mdp(o.out);
            mdp.replace_extension(".md");
            std::ofstream(mdp) << md;
            std::fprintf(stderr, "[bench] wrote %s and %s\n", o.out.c_str(), mdp.string().c_str());
        }
        return same ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "strata-bench pipeline: " << e.what() << "\n";
        for (auto& w : workers) std::cerr << "  worker log: " << w->log_path() << "\n";
        return 1;
    }
}
