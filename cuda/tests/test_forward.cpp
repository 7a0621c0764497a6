// The whole llama-family forward pass on the GPU (cuda/runtime/gpu_context.hpp) against the CPU's
// exec::Context on synthetic models built in-process (tests/unit/test_exec_synth.hpp: IQ1_S
// weights; llama with head dims 64 and 128 and grouped-query attention, a tied output, qwen2 with
// q/k/v biases, qwen3 with per-head q/k norms; llama in Q4_K, Q5_K, Q6_K, IQ4_XS, IQ1_M and
// Q4_1), f16 and q8_0 KV caches: a prefill of 40 random tokens in micro-batches, then 20 greedy
// decode steps. Also: graph and no-graph decode give the
// same bits; a two-stage split (layers [0,k) then [k,n) through forward_hidden) gives the whole
// model's bits; a context that does not fit a small budget is refused naming the largest that
// fits; the weight upload reports its progress. The deepseek2 / kimi architectures
// (run_model_checks): an in-memory tiny kimi-linear, and any GGUF models given as arguments:
// GPU against CPU, graph against direct steps, three stages against one, decode after prefill
// against one prefill, the chunked KDA form against the CPU's step form.
//
// Plain main (no doctest); exits 77 without a GPU. Optional arguments: GGUF model paths, run
// through the comparisons above instead of the synthetic models.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "../../tests/unit/test_exec_synth.hpp"
#include "../../tests/unit/test_kimi_synth.hpp"
#include "cuda_test_util.cuh"
#include "exec/context/context.hpp"
#include "exec/memory/device_plan.hpp"
#include "gguf/model_file.hpp"
#include "runtime/gpu_context.hpp"
#include "model/weights.hpp"
#include "util/error.hpp"

using namespace strata;
using cuda_test::expect;

namespace {

// Tolerance of the GPU's logits against the CPU's, as relative RMS (||gpu - cpu|| / ||cpu||) per
// step. Decode products quantize activations to Q8_K exactly as the CPU does, so one product
// differs only in float summation order; prefill products (more than 8 tokens) take f16
// activations on tensor cores or cuBLAS instead of the CPU's Q8_K. The CPU's own Q8_K noise
// against exact activations measures ~2% relative RMS on these IQ1_S models
// (tests/unit/exec/test_exec_forward.cpp), and the GPU's f16 path sits near the exact side, so the two
// differ by about that much; the decode steps inherit it through the KV cache. 0.05 is 2.5x that.
constexpr double kRelRmsBound = 0.05;
// The CPU's greedy choice must be the GPU's unless its top-2 margin is below this fraction of the
// logits' RMS (a near tie that the noise above may legitimately flip); such steps are counted.
constexpr double kTieFraction = 0.05;

std::vector<float> nan_filled(size_t n) { return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()); }

bool all_finite(const std::vector<float>& v) {
    for (float x : v)
        if (!std::isfinite(x)) return false;
    return true;
}

double rel_rms(const std::vector<float>& ref, const std::vector<float>& got) {
    double ss = 0, rs = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        ss += double(ref[i] - got[i]) * double(ref[i] - got[i]);
        rs += double(ref[i]) * double(ref[i]);
    }
    return std::sqrt(ss / std::max(rs, 1e-30));
}

int32_t argmax(const std::vector<float>& v) {
    size_t a = 0;
    for (size_t i = 1; i < v.size(); ++i)
        if (v[i] > v[a]) a = i;
    return int32_t(a);
}

// Top-1 minus top-2, relative to the RMS of the row.
double margin(const std::vector<float>& v) {
    float a = -INFINITY, b = -INFINITY;
    double ss = 0;
    for (float x : v) {
        ss += double(x) * x;
        if (x > a) b = a, a = x;
        else if (x > b) b = x;
    }
    return double(a - b) / std::sqrt(ss / double(v.size()) + 1e-30);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab) {
    std::uniform_int_distribution<int32_t> d(0, int32_t(n_vocab - 1));
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = d(cuda_test::rng);
    return t;
}

// Something that runs a prompt and then one token at a time, returning the last token's logits.
struct Runner {
    virtual ~Runner() = default;
    virtual std::vector<float> run(const std::vector<int32_t>& tokens) = 0;
    // The routing margin of the last token run (the CPU's: the reference the GPU is judged by).
    virtual float routing_margin() const { return INFINITY; }
};

struct CpuRunner final : Runner {
    exec::Context ctx;
    CpuRunner(const gguf::ModelFile& f, const exec::ContextParams& p) : ctx(f, p) {}
    std::vector<float> run(const std::vector<int32_t>& tokens) override {
        auto out = nan_filled(size_t(ctx.n_vocab()));
        ctx.decode(tokens, out.data());
        return out;
    }
    float routing_margin() const override { return ctx.last_token_routing_margin(); }
};

struct GpuRunner final : Runner {
    cuda::GpuContext ctx;
    GpuRunner(const gguf::ModelFile& f, const exec::ContextParams& p, bool graphs)
        : ctx(f, p, cuda::GpuOptions{.cuda_graphs = graphs, .progress = {}}) {}
    std::vector<float> run(const std::vector<int32_t>& tokens) override {
        auto out = nan_filled(size_t(ctx.n_vocab()));
        ctx.decode(tokens, out.data());
        return out;
    }
};

// The layers split into stages at `cuts` (ascending), each a GPU context, the hidden states
// (with any banked checkpoints) handed over on the host, as a pipeline does.
struct SplitRunner final : Runner {
    std::vector<std::unique_ptr<cuda::GpuContext>> stages;
    SplitRunner(const gguf::ModelFile& f, exec::ContextParams p, std::vector<int> cuts) {
        cuts.insert(cuts.begin(), 0);
        cuts.push_back(-1);
        for (size_t i = 0; i + 1 < cuts.size(); ++i) {
            p.first_layer = cuts[i];
            p.last_layer = cuts[i + 1];
            stages.push_back(std::make_unique<cuda::GpuContext>(f, p));
        }
    }
    SplitRunner(const gguf::ModelFile& f, exec::ContextParams p, int k) : SplitRunner(f, p, std::vector<int>{k}) {}
    cuda::GpuContext& last() { return *stages.back(); }
    std::vector<float> run(const std::vector<int32_t>& tokens) override {
        const int64_t n = int64_t(tokens.size());
        auto hidden = nan_filled(size_t(stages[0]->output_floats(n, false)));
        stages[0]->decode(tokens, hidden.data());
        for (size_t i = 1; i < stages.size(); ++i) {
            auto next = nan_filled(size_t(stages[i]->output_floats(n, false)));
            stages[i]->forward_hidden(hidden.data(), n, next.data());
            hidden.swap(next);
        }
        return hidden;
    }
};

struct Trace {
    std::vector<std::vector<float>> logits;  // prefill's last row, then each decode step
    std::vector<float> margins;              // each step's routing margin (+inf: not known or no MoE)
};

// Prefill `prompt`, then n_steps greedy steps choosing with `chooser`'s logits (the CPU's), so
// that every runner sees the same tokens.
std::vector<Trace> run_all(std::vector<Runner*> runners, const std::vector<int32_t>& prompt, int n_steps) {
    std::vector<Trace> traces(runners.size());
    std::vector<int32_t> input = prompt;
    for (int step = 0; step <= n_steps; ++step) {
        for (size_t r = 0; r < runners.size(); ++r) {
            traces[r].logits.push_back(runners[r]->run(input));
            traces[r].margins.push_back(runners[r]->routing_margin());
        }
        input = {argmax(traces[0].logits.back())};
    }
    return traces;
}

struct Case {
    std::string name;
    test::SynthSpec spec;
    exec::KvType kv;
};

// A step whose CPU routing margin is below route_near_tie (MoE models: a near tie that the GPU's
// float noise may legitimately route the other way, DESIGN.md "Comparing logits") is printed with
// its error, not judged; at least half the steps must be judged.
void check_against_cpu(const std::string& name, const Trace& cpu, const Trace& gpu, double route_near_tie = 0.0) {
    double worst = 0, worst_unjudged = 0;
    int ties = 0, finite = 0, route_ties = 0;
    const int steps = int(cpu.logits.size());
    for (size_t s = 0; s < cpu.logits.size(); ++s) {
        finite += all_finite(gpu.logits[s]);
        const double r = rel_rms(cpu.logits[s], gpu.logits[s]);
        if (double(cpu.margins[s]) < route_near_tie) {
            ++route_ties;
            worst_unjudged = std::max(worst_unjudged, r);
            continue;
        }
        worst = std::max(worst, r);
        if (margin(cpu.logits[s]) < kTieFraction) {
            ++ties;
            continue;
        }
        expect(argmax(cpu.logits[s]) == argmax(gpu.logits[s]),
               name + ": step " + std::to_string(s) + " greedy token differs (cpu " + std::to_string(argmax(cpu.logits[s])) +
                   ", gpu " + std::to_string(argmax(gpu.logits[s])) + ")");
    }
    expect(finite == steps, name + ": non-finite GPU logits");
    expect(worst <= kRelRmsBound, name + ": relative RMS " + std::to_string(worst) + " > " + std::to_string(kRelRmsBound));
    expect(2 * route_ties <= steps, name + ": " + std::to_string(route_ties) + " of " + std::to_string(steps) +
                                        " steps were routing near ties: too few judged");
    std::printf("  %-34s gpu vs cpu: worst rel RMS %.5f over %d judged steps (bound %.3f), logit near ties %d", name.c_str(),
                worst, steps - route_ties, kRelRmsBound, ties);
    if (route_ties > 0)
        std::printf("; routing near ties (margin < %.3g) %d, not judged, worst rel RMS %.5f", route_near_tie, route_ties,
                    worst_unjudged);
    std::printf("\n");
}

void check_identical(const std::string& name, const Trace& a, const Trace& b) {
    size_t same = 0;
    for (size_t s = 0; s < a.logits.size(); ++s) same += same_bits(a.logits[s], b.logits[s]);
    expect(same == a.logits.size(),
           name + ": " + std::to_string(a.logits.size() - same) + " of " + std::to_string(a.logits.size()) + " steps differ");
    std::printf("  %-34s bit-identical on %zu of %zu steps\n", name.c_str(), same, a.logits.size());
}

void run_case(const Case& c) {
    const uint64_t seed = cuda_test::rng();
    std::printf("%s (model seed %llu)\n", c.name.c_str(), (unsigned long long)seed);
    const auto file = test::make_model(c.spec, seed);
    const auto prompt = random_tokens(40, c.spec.n_vocab);
    constexpr int kSteps = 20;
    // n_batch 16: the prefill's micro-batches of 16, 16 and 8 tokens run the tensor-core / cuBLAS
    // products and the gemv; the CPU runs the same micro-batches.
    exec::ContextParams p{.n_ctx = 96, .n_threads = 2, .kv_type = c.kv, .n_batch = 16};
    {
        CpuRunner cpu(*file, p);
        GpuRunner gpu(*file, p, true);
        const auto t = run_all({&cpu, &gpu}, prompt, kSteps);
        check_against_cpu(c.name, t[0], t[1]);
    }
    // n_batch 8: every product is the deterministic gemv, so graph and no-graph decode, and a split
    // into two stages, must reproduce the bits (independent contexts could otherwise time
    // different prefill paths).
    exec::ContextParams p8 = p;
    p8.n_batch = 8;
    CpuRunner cpu(*file, p8);
    GpuRunner graphs(*file, p8, true), direct(*file, p8, false);
    SplitRunner split(*file, p8, int(c.spec.n_layer / 2));
    const auto t = run_all({&cpu, &graphs, &direct, &split}, prompt, kSteps);
    check_against_cpu(c.name + " (n_batch 8)", t[0], t[1]);
    check_identical(c.name + " graph vs no graph", t[1], t[2]);
    check_identical(c.name + " two stages vs one", t[1], t[3]);
    expect(graphs.ctx.graph_disabled_reason().empty(), c.name + ": " + graphs.ctx.graph_disabled_reason());
    expect(graphs.ctx.graph_replays() == kSteps - 1,
           c.name + ": " + std::to_string(graphs.ctx.graph_replays()) + " graph replays, expected " +
               std::to_string(kSteps - 1) + " (the first step runs directly)");
    expect(direct.ctx.graph_replays() == 0, c.name + ": graphs replayed with graphs disabled");
    expect(split.last().graph_replays() == kSteps - 1, c.name + ": the second stage did not replay its graph");
}

void check_all_logits_and_reset() {
    test::SynthSpec s;
    s.wtype = quant::kTypeIQ1_S;
    s.n_vocab = 512;
    const auto file = test::make_model(s, cuda_test::rng());
    // 40 tokens in one micro-batch of 48: the logits come in row chunks of 32 and 8
    // (exec::device_logit_rows).
    exec::ContextParams p{.n_ctx = 64, .n_threads = 2, .n_batch = 48};
    exec::Context cpu(*file, p);
    cuda::GpuContext gpu(*file, p);
    constexpr int64_t n = 40;
    const auto prompt = random_tokens(n, s.n_vocab);
    auto c = nan_filled(size_t(n * s.n_vocab)), g = nan_filled(size_t(n * s.n_vocab));
    cpu.decode(prompt, c.data(), true);
    gpu.decode(prompt, g.data(), true);
    expect(all_finite(g), "all_logits: non-finite GPU logits");
    const double r = rel_rms(c, g);
    expect(r <= kRelRmsBound, "all_logits: relative RMS " + std::to_string(r));
    std::printf("  %-34s rel RMS %.5f over %lld rows\n", "all_logits", r, (long long)n);
    {
        // Micro-batches of 13, 13, 13 and 1: the last one-token micro-batch's row lands at its
        // own place (row 39), not at row 0.
        exec::ContextParams p13 = p;
        p13.n_batch = 13;
        cuda::GpuContext gpu13(*file, p13);
        auto g13 = nan_filled(c.size());
        gpu13.decode(prompt, g13.data(), true);
        const double r13 = rel_rms(c, g13);
        expect(all_finite(g13) && r13 <= kRelRmsBound,
               "all_logits in micro-batches of 13 (the last of 1 token): relative RMS " + std::to_string(r13));
        std::printf("  %-34s rel RMS %.5f (bound %.3f)\n", "all_logits, last micro-batch of 1", r13, kRelRmsBound);
    }
    // reset replays the same positions with the same products: the same bits.
    gpu.reset();
    auto again = nan_filled(g.size());
    gpu.decode(prompt, again.data(), true);
    expect(same_bits(g, again), "reset: a second prefill differs from the first");
    // truncate then the same 4 tokens again: finite rows near the first run's (the 4-token
    // products run the gemv where the 40-token ones did not).
    gpu.truncate(n - 4);
    auto tail = nan_filled(size_t(4 * s.n_vocab));
    gpu.decode({prompt.data() + n - 4, 4}, tail.data(), true);
    expect(all_finite(tail), "truncate: non-finite logits");
    const std::vector<float> first_tail(g.end() - 4 * s.n_vocab, g.end());
    expect(rel_rms(first_tail, tail) <= kRelRmsBound, "truncate: the re-run rows differ beyond the bound");
    // Errors leave the context unchanged.
    const int64_t before = gpu.n_past();
    bool threw = false;
    try {
        const int32_t bad = int32_t(s.n_vocab);
        gpu.decode({&bad, 1}, tail.data());
    } catch (const Error& e) {
        threw = e.status() == Status::invalid_argument;
    }
    expect(threw && gpu.n_past() == before, "a bad token id is refused and changes nothing");
}

void check_budget_refusal_and_progress() {
    test::SynthSpec s;
    s.wtype = quant::kTypeIQ1_S;
    const auto file = test::make_model(s, cuda_test::rng());
    uint64_t last_done = 0, last_total = 0, calls = 0;
    exec::ContextParams p{.n_ctx = 256, .n_threads = 2};
    cuda::GpuContext ok(*file, p, cuda::GpuOptions{.cuda_graphs = true, .progress = [&](uint64_t d, uint64_t t) {
                                                       expect(d >= last_done && d <= t, "progress goes forward");
                                                       last_done = d, last_total = t, ++calls;
                                                   }});
    expect(calls > 0 && last_done == last_total && last_total == ok.plan().weight_bytes,
           "the upload reports progress up to the planned weight bytes");
    expect(ok.plan().describe().find("device memory") != std::string::npos, "the plan says it is device memory");
    // A budget that holds the weights, the fixed scratch and exactly 100 positions (KV rows and
    // RoPE table rows): 256 do not fit, 100 is the largest that does.
    const exec::MemoryPlan& plan = ok.plan();
    const uint64_t rope_per_pos = uint64_t(ok.hparams().rope.n_rot / 2) * 2 * sizeof(float);
    const uint64_t scratch_fixed = plan.scratch_bytes - 256 * rope_per_pos;
    exec::ContextParams small = p;
    small.memory_budget = plan.weight_bytes + scratch_fixed + 100 * (plan.kv_bytes_per_position + rope_per_pos);
    std::string msg;
    Status st = Status::ok;
    try {
        cuda::GpuContext refused(*file, small);
    } catch (const Error& e) {
        st = e.status();
        msg = e.what();
    }
    expect(st == Status::out_of_memory, "a context that does not fit is refused with out_of_memory");
    expect(msg.find("at most 100") != std::string::npos && msg.find("device memory") != std::string::npos,
           "the refusal names the largest context that fits: " + msg);
    std::printf("  %-34s %s\n", "budget refusal", msg.substr(0, 160).c_str());
}

// The deepseek2 / kimi checks on one model (a GGUF file, or the in-memory tiny kimi-linear):
// GPU against CPU over a prefill and greedy decode steps (the CPU's own micro-batches); graph
// against direct one-token steps (bit-identical) where graphs run, else the reason printed; three
// stages against one (bit-identical: n_batch 8 keeps every product on the deterministic gemv);
// decode after prefill against one longer prefill's rows; with KDA layers the chunked form
// against the CPU's step form, and truncation refused mid-sequence.
void run_model_checks(const std::string& name, const gguf::ModelFile& file, double route_near_tie) {
    const model::Hparams hp = model::read_hparams(file);
    const auto prompt = random_tokens(40, hp.n_vocab);
    constexpr int kSteps = 12;
    exec::ContextParams p{.n_ctx = 128, .n_threads = 2, .n_batch = 16};
    {
        CpuRunner cpu(file, p);
        GpuRunner gpu(file, p, true);
        const auto t = run_all({&cpu, &gpu}, prompt, kSteps);
        check_against_cpu(name, t[0], t[1], route_near_tie);
    }
    exec::ContextParams p8 = p;
    p8.n_batch = 8;
    std::vector<int> cuts;
    if (hp.n_layer >= 3) cuts = {int(hp.n_layer / 3), int(2 * hp.n_layer / 3)};
    else cuts = {1};
    CpuRunner cpu(file, p8);
    GpuRunner graphs(file, p8, true), direct(file, p8, false);
    SplitRunner split(file, p8, cuts);
    const auto t = run_all({&cpu, &graphs, &direct, &split}, prompt, kSteps);
    check_against_cpu(name + " (n_batch 8)", t[0], t[1], route_near_tie);
    check_identical(name + " graph vs no graph", t[1], t[2]);
    check_identical(name + " " + std::to_string(split.stages.size()) + " stages vs one", t[1], t[3]);
    // Only MoE routed on the host may turn graphs off; a capture that fails is a failure.
    const std::string host_routing =
        exec::gpu_host_routing_reason(model::bind_weights(file, hp, 0, int(hp.n_layer)));
    expect(graphs.ctx.graph_disabled_reason() == host_routing,
           name + ": graphs off for another reason than host routing: " + graphs.ctx.graph_disabled_reason());
    if (host_routing.empty())
        expect(graphs.ctx.graph_replays() == kSteps - 1, name + ": " + std::to_string(graphs.ctx.graph_replays()) +
                                                             " graph replays, expected " + std::to_string(kSteps - 1));
    else
        std::printf("  %-34s no graphs: %s\n", name.c_str(), host_routing.c_str());

    // Decode after prefill == the rows of one prefill of the same tokens, to float rounding: at
    // n_batch 8 every prefill product is the gemv (Q8_K activations), and one-token steps run the
    // same gemv or, where MoE routes on the device, the expert kernels of moe.cuh, which take the
    // same Q8_K activations and integers and differ from the gemv only in float summation order.
    {
        const bool device_moe = hp.moe.n_expert > 0 && host_routing.empty();
        const double bound = 1e-3;
        cuda::GpuContext a(file, p8), b(file, p8);
        const int64_t n = 40, extra = 6, V = hp.n_vocab;
        const auto tokens = random_tokens(n + extra, V);
        auto full = nan_filled(size_t((n + extra) * V));
        a.decode(tokens, full.data(), true);
        auto step = nan_filled(size_t(V));
        b.decode({tokens.data(), size_t(n)}, step.data());
        double worst = 0;
        for (int64_t i = 0; i < extra; ++i) {
            b.decode({tokens.data() + n + i, 1}, step.data());
            const std::vector<float> row(full.begin() + (n + i) * V, full.begin() + (n + i + 1) * V);
            worst = std::max(worst, rel_rms(row, step));
        }
        expect(all_finite(full) && worst <= bound, name + ": decode after prefill differs from one prefill by " +
                                                       std::to_string(worst));
        std::printf("  %-34s decode after prefill vs one prefill: worst rel RMS %.2e (bound %.0e%s)\n", name.c_str(),
                    worst, bound, device_moe ? ", MoE routed on the device" : "");
    }
    bool recurrent = false;
    for (int64_t il = 0; il < hp.n_layer; ++il) recurrent = recurrent || hp.is_recurrent_layer(il);
    if (recurrent) {
        // The chunked form (chunks of 16 over a 40-token prefill: 16, 16, 8) against the CPU's step form.
        exec::ContextParams pc = p;
        pc.n_batch = 64;
        CpuRunner step_cpu(file, pc);
        pc.kda_chunk = 16;
        GpuRunner chunked(file, pc, true);
        const auto tc = run_all({&step_cpu, &chunked}, prompt, 4);
        check_against_cpu(name + " (GPU chunked KDA)", tc[0], tc[1], route_near_tie);
        const bool refused = !chunked.ctx.can_truncate(chunked.ctx.n_past() - 1);
        expect(refused && chunked.ctx.can_truncate(0), name + ": a recurrent stage must refuse to drop positions");
    }
}

void run_model_file(const char* path) {
    const auto file = gguf::ModelFile::open({path});
    const model::Hparams hp = model::read_hparams(*file);
    if (hp.arch.attention != model::AttentionKind::gqa) {
        // IQ1_S models: near ties as tests/python/forward/test_forward_deepseek2.py judges iq1_s routings.
        run_model_checks(path, *file, 0.015);
        return;
    }
    const auto prompt = random_tokens(40, hp.n_vocab);
    exec::ContextParams p{.n_ctx = 128, .n_threads = 0, .n_batch = 16};
    CpuRunner cpu(*file, p);
    GpuRunner gpu(*file, p, true);
    const auto t = run_all({&cpu, &gpu}, prompt, 20);
    check_against_cpu(path, t[0], t[1]);
}

}  // namespace

int main(int argc, char** argv) {
    if (int rc = cuda_test::start("forward"); rc != 0) return rc;
    try {
        if (argc > 1) {
            for (int i = 1; i < argc; ++i) run_model_file(argv[i]);
        } else {
            auto spec = [](const std::string& arch, int64_t head_dim, int64_t n_head, int64_t n_head_kv) {
                test::SynthSpec s;
                s.arch = arch;
                s.wtype = quant::kTypeIQ1_S;
                s.n_embd = 256;
                s.n_head = n_head;
                s.n_head_kv = n_head_kv;
                s.head_dim = head_dim == 256 / n_head ? 0 : head_dim;
                s.n_ff = 512;
                s.n_layer = 2;
                s.n_vocab = 512;
                return s;
            };
            std::vector<Case> cases = {
                {"llama hd64 gqa4:2 f16", spec("llama", 64, 4, 2), exec::KvType::f16},
                {"llama hd64 gqa4:1 q8_0", spec("llama", 64, 4, 1), exec::KvType::q8_0},
                {"llama hd128 gqa4:2 f16", spec("llama", 128, 4, 2), exec::KvType::f16},
                {"qwen2 hd64 biases q8_0", spec("qwen2", 64, 4, 2), exec::KvType::q8_0},
                {"qwen3 hd128 qk-norms f16", spec("qwen3", 128, 4, 2), exec::KvType::f16},
                {"qwen3 hd128 qk-norms q8_0", spec("qwen3", 128, 4, 2), exec::KvType::q8_0},
            };
            Case tied{"llama hd64 tied output f16", spec("llama", 64, 4, 2), exec::KvType::f16};
            tied.spec.tied = true;
            tied.spec.n_layer = 3;
            cases.push_back(tied);
            // The other weight types a real release carries (issue 15), every matrix and the
            // embeddings in one type: the fused decode products of the Kimi types, Q4_1 (SmolLM2's
            // type, dequantize-then-dot), and their prefill through the tensor cores or cuBLAS.
            for (const auto& [type, label] : {std::pair{quant::kTypeQ4_K, "q4_K"}, {quant::kTypeQ5_K, "q5_K"},
                                              {quant::kTypeQ6_K, "q6_K"}, {quant::kTypeIQ4_XS, "iq4_xs"},
                                              {quant::kTypeIQ1_M, "iq1_m"}, {quant::kTypeQ4_1, "q4_1"}}) {
                Case c{std::string("llama hd64 ") + label + " weights f16", spec("llama", 64, 4, 2), exec::KvType::f16};
                c.spec.wtype = type;
                cases.push_back(c);
            }
            for (const Case& c : cases) run_case(c);
            check_all_logits_and_reset();
            check_budget_refusal_and_progress();
            // kimi-linear in memory (f32 weights: KDA, NoPE MLA, MoE routed on the host); the
            // IQ1_S deepseek2 / kimi-linear / kimi-k3 models come as arguments (device-check.sh
            // writes them with strata-mkmodel).
            run_model_checks("tiny kimi-linear (f32)", *test::tiny_kimi(cuda_test::rng()), 1e-3);
        }
    } catch (const std::exception& e) {
        cuda_test::report(false, std::string("exception: ") + e.what());
    }
    return cuda_test::finish("forward");
}
