// End-to-end CPU decode and prefill benchmark of one GGUF model, next to the memory-read bandwidth
// measured in the same run.
//
//   bench_decode MODEL.gguf [--threads 1,2] [--tokens 64] [--prompt 512] [--reps 3]
//                [--prefill-reps N] [--decode-prompt 16] [--seed 1] [--kv f16|q8_0] [--n-ctx N]
//                [--bw-mib 1024] [--bw-reps 9] [--json OUT.json] [--md OUT.md]
//
// Decode is bandwidth bound: each token reads every matrix once. So the report states the weight
// bytes one decoded token reads, and turns decode tok/s into GB/s of weights to compare with the
// streaming-read bandwidth of the same thread count. Per thread count:
//   decode:  reset, prefill --decode-prompt random tokens (untimed), then --tokens single-token
//            decode calls, each timed; one rep = their sum. Median and min over --reps.
//   prefill: reset, one decode call of --prompt random tokens, timed. Median and min over
//            --prefill-reps (default 2: one 512-token prefill on one thread of a 2-vCPU Xeon takes
//            ~35 s, and the defaults are meant to finish in about 3 minutes there).
// Token ids come from mt19937_64(--seed) as rng() % n_vocab (portable across standard libraries);
// they are printed and written to the JSON report.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "exec/context/context.hpp"
#include "gguf/digest.hpp"
#include "gguf/ggml_types.hpp"
#include "gguf/model_file.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"
#include "util/cpu_features.hpp"
#include "util/error.hpp"

using namespace strata;

namespace {

struct Options {
    std::string model;
    std::vector<int> threads{1, 2};
    int64_t tokens = 64;
    int64_t prompt = 512;
    int reps = 3;
    int prefill_reps = 2;
    int64_t decode_prompt = 16;
    uint64_t seed = 1;
    exec::KvType kv = exec::KvType::f16;
    int64_t n_ctx = 0;  // 0: just enough for the longest run
    int64_t bw_mib = 1024;
    int bw_reps = 9;
    std::string json_path, md_path;
};

[[noreturn]] void usage(const char* argv0, const std::string& why) {
    if (!why.empty()) std::fprintf(stderr, "bench_decode: %s\n", why.c_str());
    std::fprintf(stderr,
                 "usage: %s MODEL.gguf [--threads 1,2] [--tokens 64] [--prompt 512] [--reps 3] [--prefill-reps 2]\n"
                 "       [--decode-prompt 16] [--seed 1] [--kv f16|q8_0] [--n-ctx N] [--bw-mib 1024] [--bw-reps 9]\n"
                 "       [--json OUT.json] [--md OUT.md]\n",
                 argv0);
    std::exit(2);
}

int64_t parse_int(const char* argv0, const std::string& flag, const std::string& s, int64_t min) {
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || v < min) usage(argv0, flag + " needs an integer >= " + std::to_string(min));
    return v;
}

Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage(argv[0], a + " needs a value");
            return argv[++i];
        };
        if (a == "--threads") {
            o.threads.clear();
            std::stringstream ss(next());
            std::string item;
            while (std::getline(ss, item, ',')) o.threads.push_back(int(parse_int(argv[0], a, item, 1)));
            if (o.threads.empty()) usage(argv[0], "--threads needs a list like 1,2");
        } else if (a == "--tokens") o.tokens = parse_int(argv[0], a, next(), 1);
        else if (a == "--prompt") o.prompt = parse_int(argv[0], a, next(), 1);
        else if (a == "--reps") o.reps = int(parse_int(argv[0], a, next(), 1));
        else if (a == "--prefill-reps") o.prefill_reps = int(parse_int(argv[0], a, next(), 1));
        else if (a == "--decode-prompt") o.decode_prompt = parse_int(argv[0], a, next(), 1);
        else if (a == "--seed") o.seed = uint64_t(parse_int(argv[0], a, next(), 0));
        else if (a == "--n-ctx") o.n_ctx = parse_int(argv[0], a, next(), 1);
        else if (a == "--bw-mib") o.bw_mib = parse_int(argv[0], a, next(), 1);
        else if (a == "--bw-reps") o.bw_reps = int(parse_int(argv[0], a, next(), 1));
        else if (a == "--json") o.json_path = next();
        else if (a == "--md") o.md_path = next();
        else if (a == "--kv") {
            const std::string v = next();
            if (v == "f16") o.kv = exec::KvType::f16;
            else if (v == "q8_0") o.kv = exec::KvType::q8_0;
            else usage(argv[0], "--kv must be f16 or q8_0");
        } else if (a == "-h" || a == "--help") usage(argv[0], "");
        else if (!a.empty() && a[0] == '-') usage(argv[0], "unknown option " + a);
        else if (o.model.empty()) o.model = a;
        else usage(argv[0], "one model path only (the first shard of a split model)");
    }
    if (o.model.empty()) usage(argv[0], "no model given");
    return o;
}

// What one decoded token reads from the weights, from the tensors the forward pass binds.
struct ByteCount {
    uint64_t attention = 0;  // every attention matrix of every layer (gqa, latent or KDA)
    uint64_t ffn = 0;        // dense FFNs, routers, shared experts, and the chosen routed experts
    uint64_t experts_all = 0;  // routed experts stored (MoE layers), of which ffn counts n_used / n_expert
    uint64_t head = 0;       // output.weight, or token_embd.weight when tied (all of it: every logit)
    std::string head_name, head_type;
    bool tied = false;
    uint64_t embd_row = 0;   // the one token_embd row the token's embedding is dequantized from
    std::map<std::string, std::pair<int, uint64_t>> by_type;  // counted matrices: type -> (count, bytes)
    // Read per token but not counted:
    uint64_t norm_bias_f32 = 0;   // norm weights and biases, f32 copies made at load
    uint64_t kv_per_position = 0; // K and V rows of every layer, read once per past position
    // Not read per token:
    uint64_t embd_rest = 0;       // the other n_vocab - 1 rows of token_embd (untied models)
    uint64_t total() const { return attention + ffn + head + embd_row; }
};

ByteCount count_bytes(const gguf::ModelFile& file, const model::Hparams& hp, exec::KvType kv) {
    const model::ModelWeights w = model::bind_weights(file, hp, 0, int(hp.n_layer));
    ByteCount c;
    auto add = [&](const model::WeightView& v, uint64_t& into) {
        into += v.nbytes;
        auto& e = c.by_type[gguf::ggml_type_name(v.type)];
        e.first += 1;
        e.second += v.nbytes;
    };
    auto vec_bytes = [](const std::vector<float>& v) { return uint64_t(v.size() * sizeof(float)); };
    for (const model::LayerWeights& L : w.layers) {
        for (const model::WeightView* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.wq_a, &L.wq_b, &L.wkv_a, &L.wk_b, &L.wv_b,
                                           &L.attn_gate, &L.f_a, &L.f_b, &L.w_beta, &L.g_a, &L.g_b, &L.g_full})
            if (v->present()) add(*v, c.attention);
        for (const model::WeightView* v : {&L.w_gate, &L.w_up, &L.w_down, &L.gate_inp, &L.gate_shexp, &L.up_shexp,
                                           &L.down_shexp, &L.routed_down, &L.routed_up})
            if (v->present()) add(*v, c.ffn);
        if (L.moe) {
            // Decode reads only the chosen experts: n_used of n_expert matrices of each stack.
            for (const model::WeightView* v : {&L.gate_exps, &L.up_exps, &L.down_exps}) {
                const uint64_t active = v->mat_stride * uint64_t(hp.moe.n_expert_used);
                c.ffn += active;
                c.experts_all += v->nbytes;
                auto& e = c.by_type[gguf::ggml_type_name(v->type)];
                e.first += int(hp.moe.n_expert_used);
                e.second += active;
            }
        }
        for (const auto* v : {&L.attn_norm, &L.ffn_norm, &L.bq, &L.bk, &L.bv, &L.q_norm, &L.k_norm, &L.q_a_norm,
                              &L.kv_a_norm, &L.exp_probs_b, &L.ssm_norm, &L.dt_bias, &L.routed_norm})
            c.norm_bias_f32 += vec_bytes(*v);
    }
    c.norm_bias_f32 += vec_bytes(w.output_norm);
    add(w.output, c.head);
    c.head_name = w.output.name;
    c.head_type = gguf::ggml_type_name(w.output.type);
    c.tied = w.tied_output;
    c.embd_row = w.token_embd.row_bytes;
    // Tied: the head already counts all of token_embd, the embedding row is a second read of one row.
    c.embd_rest = c.tied ? 0 : w.token_embd.nbytes - w.token_embd.row_bytes;
    c.kv_per_position = exec::kv_bytes_per_position_range(hp, kv, 0, hp.n_layer);
    return c;
}

struct ThreadResult {
    int threads = 0;
    bench::Stats decode;                      // per rep: sum of the --tokens step times
    std::vector<std::vector<double>> step_ns; // per rep, per step
    bench::Stats prefill;                     // per rep: one --prompt-token decode call
    double decode_tok_s = 0, decode_tok_s_best = 0, prefill_tok_s = 0, prefill_tok_s_best = 0;
    double weight_gbps = 0, weight_gbps_best = 0, membw_gbps = 0, of_membw = 0;
};

std::vector<int32_t> random_ids(std::mt19937_64& rng, int64_t n, int64_t n_vocab) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& id : ids) id = int32_t(rng() % uint64_t(n_vocab));
    return ids;
}

std::string mb(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f MB", double(bytes) / 1e6);
    return buf;
}

template <typename T>
std::string json_array(const std::vector<T>& v) {
    std::ostringstream o;
    o.precision(15);
    o << '[';
    for (size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
    o << ']';
    return o.str();
}

std::string int_ns_array(const std::vector<double>& v) {
    std::vector<long long> r;
    for (double x : v) r.push_back((long long)(x + 0.5));
    return json_array(r);
}

std::string stats_json(const bench::Stats& s) {
    std::ostringstream o;
    o.precision(15);
    o << "{\"median_ns\": " << (long long)(s.median_ns + 0.5) << ", \"min_ns\": " << (long long)(s.min_ns + 0.5)
      << ", \"reps\": " << s.reps << ", \"rep_ns\": " << int_ns_array(s.samples_ns) << "}";
    return o.str();
}

bool write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.close();
    if (!out) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return false;
    }
    std::printf("wrote %s\n", path.c_str());
    return true;
}

}  // namespace

int main(int argc, char** argv) try {
    const Options o = parse_args(argc, argv);
    std::string command_line;  // recorded so a report says how to reproduce it
    for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);

    // The artifact: shards, their digests (cached by path, size and mtime) and the model identity.
    auto file = gguf::ModelFile::open({o.model});
    std::vector<std::string> digests;
    uint64_t file_bytes = 0;
    for (const gguf::Shard& s : file->shards()) {
        std::printf("sha256 %s ...\n", s.path.c_str());
        std::fflush(stdout);
        digests.push_back(gguf::sha256_file(s.path));
        file_bytes += s.size;
    }
    const std::string identity = gguf::model_identity(*file, digests);
    std::string general_name = "unknown";
    if (auto i = file->find_key("general.name"))
        if (auto v = file->metadata_value(*i).as_string()) general_name = std::string(*v);
    uint64_t tensor_bytes = 0;
    for (const gguf::TensorInfo& t : file->tensors()) tensor_bytes += t.nbytes;

    const model::Hparams hp = model::read_hparams(*file);
    const ByteCount bytes = count_bytes(*file, hp, o.kv);
    const int64_t n_ctx = o.n_ctx > 0 ? o.n_ctx : std::max(o.prompt, o.decode_prompt + o.tokens);
    const int64_t n_batch = exec::ContextParams{}.n_batch;

    std::mt19937_64 rng(o.seed);
    const std::vector<int32_t> prompt_ids = random_ids(rng, o.prompt, hp.n_vocab);
    const std::vector<int32_t> decode_prompt_ids = random_ids(rng, o.decode_prompt, hp.n_vocab);
    const std::vector<int32_t> decode_ids = random_ids(rng, o.tokens, hp.n_vocab);
    std::printf("token ids: mt19937_64(seed %" PRIu64 ") %% n_vocab %lld; decode ids start", o.seed,
                (long long)hp.n_vocab);
    for (size_t i = 0; i < std::min<size_t>(8, decode_ids.size()); ++i) std::printf(" %d", decode_ids[i]);
    std::printf(" ...\n");

    const std::string load_before = bench::loadavg();

    // The ceiling: streaming-read bandwidth for 1 and 2 threads and every thread count measured,
    // once before and once after the model runs: on a shared VM it drifts by tens of percent within
    // minutes, so both are kept and the ratio uses the higher (the ceiling the run could have had).
    std::vector<int> bw_threads{1, 2};
    for (int t : o.threads)
        if (std::find(bw_threads.begin(), bw_threads.end(), t) == bw_threads.end()) bw_threads.push_back(t);
    std::map<int, bench::Bandwidth> bw_start, bw_end;
    volatile float sink = 0;
    const bench::BandwidthBuffer bw_buf(o.bw_mib);
    auto measure_bw = [&](std::map<int, bench::Bandwidth>& into, const char* when) {
        std::printf("memory read bandwidth (%lld MiB streaming sum), %s ...\n", (long long)o.bw_mib, when);
        std::fflush(stdout);
        for (int t : bw_threads) into[t] = bench::measure_read_bandwidth(bw_buf, t, o.bw_reps, sink);
    };
    measure_bw(bw_start, "start");

    std::vector<ThreadResult> results;
    std::vector<float> logits(size_t(hp.n_vocab));
    for (int t : o.threads) {
        exec::ContextParams p;
        p.n_ctx = n_ctx;
        p.n_threads = t;
        p.kv_type = o.kv;
        exec::Context ctx(*file, p);
        ThreadResult r;
        r.threads = t;
        std::printf("threads %d: decode ...\n", t);
        std::fflush(stdout);
        // Warm-up (untimed): maps every weight page in, starts the pool's threads.
        ctx.decode(decode_prompt_ids, logits.data());
        for (int i = 0; i < 2; ++i) ctx.decode({&decode_ids[size_t(i) % decode_ids.size()], 1}, logits.data());

        std::vector<double> rep_ns;
        for (int rep = 0; rep < o.reps; ++rep) {
            ctx.reset();
            ctx.decode(decode_prompt_ids, logits.data());
            std::vector<double> steps;
            double sum = 0;
            for (const int32_t& id : decode_ids) {
                const auto t0 = bench::Clock::now();
                ctx.decode({&id, 1}, logits.data());
                steps.push_back(bench::elapsed_ns(t0, bench::Clock::now()));
                sum += steps.back();
            }
            r.step_ns.push_back(std::move(steps));
            rep_ns.push_back(sum);
        }
        r.decode = bench::stats_of(rep_ns);

        std::printf("threads %d: prefill ...\n", t);
        std::fflush(stdout);
        std::vector<double> pre_ns;
        for (int rep = 0; rep < o.prefill_reps; ++rep) {
            ctx.reset();
            const auto t0 = bench::Clock::now();
            ctx.decode(prompt_ids, logits.data());
            pre_ns.push_back(bench::elapsed_ns(t0, bench::Clock::now()));
        }
        r.prefill = bench::stats_of(pre_ns);

        r.decode_tok_s = double(o.tokens) * 1e9 / r.decode.median_ns;
        r.decode_tok_s_best = double(o.tokens) * 1e9 / r.decode.min_ns;
        r.prefill_tok_s = double(o.prompt) * 1e9 / r.prefill.median_ns;
        r.prefill_tok_s_best = double(o.prompt) * 1e9 / r.prefill.min_ns;
        r.weight_gbps = double(bytes.total()) * r.decode_tok_s / 1e9;
        r.weight_gbps_best = double(bytes.total()) * r.decode_tok_s_best / 1e9;
        results.push_back(std::move(r));
    }
    measure_bw(bw_end, "end");
    std::map<int, double> ceiling;
    for (int t : bw_threads) ceiling[t] = std::max(bw_start[t].gbps, bw_end[t].gbps);
    for (ThreadResult& r : results) {
        r.membw_gbps = ceiling[r.threads];
        r.of_membw = r.weight_gbps / r.membw_gbps;
    }
    const std::string load_after = bench::loadavg();

    // ---- report ----
    const std::string cpu = bench::cpu_model();
    const unsigned hw = std::thread::hardware_concurrency();
    const std::string compiler = bench::compiler_name();
    const std::string flags = std::string(STRATA_BENCH_CXX_FLAGS) + " | strata_core: " + STRATA_BENCH_CORE_OPTIONS;
    const std::string commit = STRATA_BENCH_COMMIT;
    const char* kv_name = exec::kv_type_name(o.kv);
    std::string types_counted;
    for (const auto& [type, e] : bytes.by_type)
        types_counted += (types_counted.empty() ? "" : ", ") + type + ": " + std::to_string(e.first) + " matrices " +
                         mb(e.second);
    const std::string counted =
        "weight bytes per decoded token = nbytes of every attention and FFN matrix of all " +
        std::to_string(hp.n_layer) + " layers (MoE layers: the router, the shared experts and " +
        std::to_string(hp.moe.n_expert_used) + " of " + std::to_string(hp.moe.n_expert) +
        " routed experts, active experts only, of " + std::to_string(bytes.experts_all) +
        " B of routed experts stored) + all of " + bytes.head_name + (bytes.tied ? " (tied output)" : "") +
        " + one token_embd row; not counted: norm/bias vectors (f32 copies, " + std::to_string(bytes.norm_bias_f32) +
        " B), KV cache reads (" + std::to_string(bytes.kv_per_position) +
        " B per past position), activations; not read: the other token_embd rows";

    std::printf("\nmodel %s: %s (%s), %lld layers, n_embd %lld, n_ff %lld, n_vocab %lld, %zu shard(s), %s in files\n",
                o.model.c_str(), general_name.c_str(), hp.arch.name, (long long)hp.n_layer, (long long)hp.n_embd, (long long)hp.n_ff,
                (long long)hp.n_vocab, file->shards().size(), mb(file_bytes).c_str());
    for (size_t i = 0; i < digests.size(); ++i)
        std::printf("  shard %zu sha256 %s  %s\n", i, digests[i].c_str(), file->shards()[i].path.c_str());
    std::printf("  model identity %s\n", identity.c_str());
    std::printf("bytes per decoded token: %s (attention %s, ffn %s, head %s %s %s, token_embd row %" PRIu64
                " B); by type: %s\n",
                mb(bytes.total()).c_str(), mb(bytes.attention).c_str(), mb(bytes.ffn).c_str(), bytes.head_name.c_str(),
                bytes.head_type.c_str(), mb(bytes.head).c_str(), bytes.embd_row, types_counted.c_str());
    std::printf("  %s\n", counted.c_str());
    std::printf("cpu: %s (%u hardware threads); %s; build %s, flags '%s'; commit %s\n", cpu.c_str(), hw,
                compiler.c_str(), STRATA_BENCH_BUILD_TYPE, flags.c_str(), commit.c_str());
    std::printf("load average (1 min) before %s, after %s\n", load_before.c_str(), load_after.c_str());
    std::printf("command: %s\n", command_line.c_str());
    std::printf("config: n_ctx %lld, n_batch %lld, kv %s; decode: %lld-token prompt then %lld steps x %d reps; "
                "prefill: %lld tokens x %d reps; seed %" PRIu64 "\n",
                (long long)n_ctx, (long long)n_batch, kv_name, (long long)o.decode_prompt, (long long)o.tokens, o.reps,
                (long long)o.prompt, o.prefill_reps, o.seed);
    std::printf("memory read bandwidth (%lld MiB streaming sum, %d reps, median), start / end:", (long long)o.bw_mib,
                o.bw_reps);
    for (int t : bw_threads) std::printf(" %d thr %.2f / %.2f GB/s;", t, bw_start[t].gbps, bw_end[t].gbps);
    std::printf("\n\n%3s %12s %12s %10s %12s %12s %9s %13s %13s\n", "thr", "decode tok/s", "(best)", "ms/token",
                "weight GB/s", "read GB/s", "of membw", "prefill tok/s", "(best)");
    for (const ThreadResult& r : results)
        std::printf("%3d %12.2f %12.2f %10.2f %12.2f %12.2f %8.0f%% %13.2f %13.2f\n", r.threads, r.decode_tok_s,
                    r.decode_tok_s_best, r.decode.median_ns / double(o.tokens) / 1e6, r.weight_gbps, r.membw_gbps,
                    100.0 * r.of_membw, r.prefill_tok_s, r.prefill_tok_s_best);
    std::printf("\ntok/s from the median rep (best: from the fastest rep); weight GB/s = bytes per token x median "
                "tok/s; read GB/s = the higher of the start and end bandwidth with the same thread count; of membw = "
                "weight GB/s / read GB/s.\n");

    if (!o.json_path.empty()) {
        std::ostringstream j;
        j.precision(15);
        j << "{\n  \"benchmark\": \"decode\",\n  \"command\": \"" << bench::json_escape(command_line) << "\",\n";
        j << "  \"artifact\": {\n    \"shards\": [";
        for (size_t i = 0; i < digests.size(); ++i)
            j << (i ? ", " : "") << "{\"path\": \"" << bench::json_escape(file->shards()[i].path)
              << "\", \"bytes\": " << file->shards()[i].size << ", \"sha256\": \"" << digests[i] << "\"}";
        j << "],\n    \"model_identity\": \"" << identity << "\",\n    \"general_name\": \""
          << bench::json_escape(general_name) << "\",\n    \"architecture\": \"" << hp.arch.name
          << "\",\n    \"hparams\": {\"n_layer\": " << hp.n_layer << ", \"n_embd\": " << hp.n_embd
          << ", \"n_ff\": " << hp.n_ff << ", \"n_head\": " << hp.n_head << ", \"n_head_kv\": " << hp.n_head_kv
          << ", \"head_dim\": " << hp.head_dim << ", \"n_vocab\": " << hp.n_vocab << ", \"n_ctx_train\": "
          << hp.n_ctx_train << "},\n    \"file_bytes\": " << file_bytes << ", \"tensor_bytes\": " << tensor_bytes
          << "\n  },\n";
        j << "  \"bytes_per_token\": {\n    \"counted\": \"" << bench::json_escape(counted) << "\",\n    \"total\": "
          << bytes.total() << ", \"attention_matrices\": " << bytes.attention << ", \"ffn_matrices\": " << bytes.ffn
          << ",\n    \"output_head\": {\"tensor\": \"" << bytes.head_name << "\", \"type\": \"" << bytes.head_type
          << "\", \"bytes\": " << bytes.head << ", \"tied\": " << (bytes.tied ? "true" : "false")
          << "}, \"token_embd_row\": " << bytes.embd_row << ",\n    \"by_type\": {";
        bool first = true;
        for (const auto& [type, e] : bytes.by_type) {
            j << (first ? "" : ", ") << "\"" << type << "\": {\"matrices\": " << e.first << ", \"bytes\": " << e.second
              << "}";
            first = false;
        }
        j << "},\n    \"not_counted\": {\"norm_bias_f32_bytes\": " << bytes.norm_bias_f32
          << ", \"kv_bytes_per_past_position\": " << bytes.kv_per_position << ", \"token_embd_unread_rows_bytes\": "
          << bytes.embd_rest << "}\n  },\n";
        j << "  \"runtime\": {\"commit\": \"" << bench::json_escape(commit) << "\", \"compiler\": \""
          << bench::json_escape(compiler) << "\", \"build_type\": \"" << STRATA_BENCH_BUILD_TYPE << "\", \"flags\": \""
          << bench::json_escape(flags) << "\",\n    \"cpu\": \"" << bench::json_escape(cpu)
          << "\", \"hardware_threads\": " << hw << ", \"avx2\": " << (util::cpu_features().avx2 ? "true" : "false")
          << ", \"loadavg_1min\": {\"before\": \"" << load_before << "\", \"after\": \"" << load_after << "\"}},\n";
        j << "  \"config\": {\"threads\": " << json_array(o.threads) << ", \"n_ctx\": " << n_ctx
          << ", \"n_batch\": " << n_batch << ", \"kv_type\": \"" << kv_name << "\", \"prompt_tokens\": " << o.prompt
          << ", \"decode_prompt_tokens\": " << o.decode_prompt << ", \"decode_tokens\": " << o.tokens
          << ", \"reps\": " << o.reps << ", \"prefill_reps\": " << o.prefill_reps << ", \"seed\": " << o.seed
          << ",\n    \"token_ids\": {\"method\": \"mt19937_64(seed), rng() % n_vocab, drawn in this order\""
          << ",\n      \"prompt\": " << json_array(prompt_ids) << ",\n      \"decode_prompt\": "
          << json_array(decode_prompt_ids) << ",\n      \"decode\": " << json_array(decode_ids) << "}},\n";
        j << "  \"memory_bandwidth\": {\"method\": \"streaming float sum, each thread its contiguous share; measured "
             "at the start and at the end of the run; ceiling = the higher median\", \"buffer_mib\": " << o.bw_mib
          << ", \"results\": [";
        bool first_bw = true;
        for (const auto& [label, m] : {std::pair<const char*, const std::map<int, bench::Bandwidth>*>{"start", &bw_start},
                                       {"end", &bw_end}})
            for (const auto& [t, b] : *m) {
                j << (first_bw ? "" : ", ") << "\n    {\"when\": \"" << label << "\", \"threads\": " << t
                  << ", \"gbps\": " << b.gbps << ", \"bytes_per_rep\": " << b.bytes << ", \"timing\": "
                  << stats_json(b.stats) << "}";
                first_bw = false;
            }
        j << "]},\n  \"results\": [";
        for (size_t i = 0; i < results.size(); ++i) {
            const ThreadResult& r = results[i];
            j << (i ? "," : "") << "\n    {\"threads\": " << r.threads << ",\n     \"decode\": {\"tok_s_median\": "
              << r.decode_tok_s << ", \"tok_s_best\": " << r.decode_tok_s_best << ", \"timing\": "
              << stats_json(r.decode) << ",\n       \"step_ns\": [";
            for (size_t k = 0; k < r.step_ns.size(); ++k) j << (k ? ", " : "") << int_ns_array(r.step_ns[k]);
            j << "]},\n     \"weight_gbps\": " << r.weight_gbps << ", \"weight_gbps_best\": " << r.weight_gbps_best
              << ", \"membw_gbps\": " << r.membw_gbps << ", \"fraction_of_membw\": " << r.of_membw
              << ",\n     \"prefill\": {\"tokens\": " << o.prompt << ", \"tok_s_median\": " << r.prefill_tok_s
              << ", \"tok_s_best\": " << r.prefill_tok_s_best << ", \"timing\": " << stats_json(r.prefill) << "}}";
        }
        j << "\n  ]\n}\n";
        if (!write_file(o.json_path, j.str())) return 1;
    }

    if (!o.md_path.empty()) {
        std::ostringstream m;
        char line[512];
        m << "# Decode benchmark: " << general_name << "\n\n`" << command_line << "`\n\n";
        m << "| threads | decode tok/s (median) | decode tok/s (best rep) | ms/token | weight GB/s | read GB/s "
             "(same threads) | of read BW | prefill " << o.prompt << " tok/s (median) | prefill tok/s (best rep) |\n"
          << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
        for (const ThreadResult& r : results) {
            std::snprintf(line, sizeof line, "| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f%% | %.2f | %.2f |\n",
                          r.threads, r.decode_tok_s, r.decode_tok_s_best, r.decode.median_ns / double(o.tokens) / 1e6,
                          r.weight_gbps, r.membw_gbps, 100.0 * r.of_membw, r.prefill_tok_s, r.prefill_tok_s_best);
            m << line;
        }
        m << "\nweight GB/s = " << bytes.total() << " bytes per token x median decode tok/s; read GB/s = "
          << o.bw_mib << " MiB streaming float sum (median of " << o.bw_reps
          << "), measured in the same run at its start and its end, the higher of the two:";
        for (int t : bw_threads)
            m << " " << t << " thread(s) " << bw_start[t].gbps << " / " << bw_end[t].gbps << " GB/s;";
        m << "\n\n";
        m << "## What is counted\n\n" << counted << ".\n\n";
        m << "- attention matrices " << bytes.attention << " B, FFN matrices " << bytes.ffn << " B, head `"
          << bytes.head_name << "` (" << bytes.head_type << ") " << bytes.head << " B, one token_embd row "
          << bytes.embd_row << " B: total **" << bytes.total() << " B** per token\n";
        m << "- by type: " << types_counted << "\n";
        m << "- model: " << tensor_bytes << " B of tensors, " << file_bytes << " B in files\n\n";
        m << "## Artifact\n\n";
        for (size_t i = 0; i < digests.size(); ++i)
            m << "- shard " << i << ": `" << file->shards()[i].path << "` " << file->shards()[i].size << " B, sha256 `"
              << digests[i] << "`\n";
        m << "- model identity `" << identity << "`\n- " << hp.arch.name << ": n_layer " << hp.n_layer << ", n_embd "
          << hp.n_embd << ", n_ff " << hp.n_ff << ", n_head " << hp.n_head << ", n_head_kv " << hp.n_head_kv
          << ", n_vocab " << hp.n_vocab << "\n\n";
        m << "## Runtime\n\n- cpu: " << cpu << " (" << hw << " hardware threads)\n- compiler: " << compiler
          << "\n- build: " << STRATA_BENCH_BUILD_TYPE << ", flags `" << flags << "`\n- commit: `"
          << commit << "`\n- load average (1 min): before " << load_before << ", after " << load_after << "\n\n";
        m << "## Configuration\n\n- threads " << json_array(o.threads) << ", n_ctx " << n_ctx << ", n_batch "
          << n_batch << ", KV " << kv_name << "\n- decode: reset, " << o.decode_prompt
          << "-token prompt (untimed), then " << o.tokens << " single-token decode calls (timed each), " << o.reps
          << " reps\n- prefill: reset, one " << o.prompt << "-token decode call, " << o.prefill_reps
          << " reps\n- token ids: mt19937_64(" << o.seed << "), rng() % n_vocab (listed in the JSON report)\n\n";
        m << "## Raw timings (ns per rep, in run order)\n\n";
        for (const auto& [label, mp] : {std::pair<const char*, const std::map<int, bench::Bandwidth>*>{"start", &bw_start},
                                        {"end", &bw_end}})
            for (const auto& [t, b] : *mp)
                m << "- read bandwidth (" << label << "), " << t << " thread(s), " << b.bytes
                  << " B per rep: " << int_ns_array(b.stats.samples_ns) << "\n";
        for (const ThreadResult& r : results) {
            m << "- decode, " << r.threads << " thread(s), " << o.tokens
              << " steps per rep (sum of step times): " << int_ns_array(r.decode.samples_ns) << "\n";
            m << "- prefill, " << r.threads << " thread(s), " << o.prompt
              << " tokens: " << int_ns_array(r.prefill.samples_ns) << "\n";
        }
        m << "\nPer-step decode times are in the JSON report.\n";
        if (!write_file(o.md_path, m.str())) return 1;
    }
    return sink == 12345.0f ? 3 : 0;
} catch (const Error& e) {
    std::fprintf(stderr, "bench_decode: %s\n", e.what());
    return 1;
}
