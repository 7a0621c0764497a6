// The pipeline head against in-process workers on loopback: the same logits and tokens as one
// local sequence over several splits (micro-batched prefill included), and a stopped worker
// reported by stage, then reconnected.
#include <doctest/doctest.h>

#if STRATA_TRANSPORT_HAS_TCP

#include <chrono>
#include <functional>
#include <cstring>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "exec/sequence/local_sequence.hpp"
#include "gguf/model_file.hpp"
#include "pipeline/head.hpp"
#include "pipeline/worker.hpp"
#include "test_exec_synth.hpp"
#include "test_kimi_synth.hpp"
#include "util/error.hpp"
#include "test_support.hpp"

namespace {

using strata::pipeline::Head;
using strata::pipeline::HeadOptions;
using strata::pipeline::LayerRange;
using strata::pipeline::Worker;
using strata::pipeline::WorkerOptions;
using namespace std::chrono_literals;

const std::string kIdentityHex(64, 'a');

strata::transport::Digest identity() {
    strata::transport::Digest d;
    d.fill(0xaa);
    return d;
}

// A worker serving on 127.0.0.1 from its own thread until destroyed.
class RunningWorker {
public:
    RunningWorker(std::shared_ptr<const strata::gguf::ModelFile> file, uint16_t port = 0,
                  const std::function<void(WorkerOptions&)>& adjust = {}) {
        WorkerOptions o;
        o.listen = {"127.0.0.1", port};
        o.model_identity = kIdentityHex;
        o.stage.n_threads = 1;
        o.heartbeat = 100ms;
        o.peer_timeout = 2000ms;
        o.log = [](const std::string&) {};
        if (adjust) adjust(o);
        worker_ = std::make_unique<Worker>(std::move(file), o);
        worker_->bind();
        port_ = worker_->port();
        thread_ = std::thread([this] { worker_->run(); });
    }
    ~RunningWorker() { stop(); }
    void stop() {
        if (!thread_.joinable()) return;
        worker_->stop();
        thread_.join();
    }
    uint16_t port() const { return port_; }

private:
    std::unique_ptr<Worker> worker_;
    std::thread thread_;
    uint16_t port_ = 0;
};

HeadOptions head_options(const std::vector<uint16_t>& ports, std::vector<LayerRange> layers, int n_batch) {
    HeadOptions o;
    for (uint16_t p : ports) o.workers.push_back({"127.0.0.1", p});
    o.layers = std::move(layers);
    o.context.n_ctx = 96;
    o.context.n_threads = 1;
    o.n_batch = n_batch;
    o.wire_dtype = strata::transport::DType::f32;  // exact: the same bits as one process
    o.heartbeat = 100ms;
    o.peer_timeout = 2000ms;
    return o;
}

strata::sample::SamplerParams greedy() {
    strata::sample::SamplerParams p;
    p.temperature = 0;
    return p;
}

std::vector<int32_t> random_tokens(std::mt19937_64& rng, size_t n, int64_t n_vocab) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(rng() % uint64_t(n_vocab));
    return t;
}

// A synthetic llama of n_layer layers with n_embd wide hidden states (n_ff = 2 n_embd).
std::shared_ptr<const strata::gguf::ModelFile> synth_llama(int64_t n_layer, int64_t n_embd, uint64_t seed,
                                                           int64_t* n_vocab) {
    strata::test::SynthSpec spec;
    spec.n_layer = n_layer;
    spec.n_embd = n_embd;
    spec.n_ff = 2 * n_embd;
    *n_vocab = spec.n_vocab;
    return strata::test::make_model(spec, seed);
}

}  // namespace

TEST_CASE("pipeline head: three stages give the logits and tokens of one local sequence") {
    const uint64_t seed = strata::test::test_seed();
    int64_t n_vocab = 0;
    const auto file = synth_llama(5, 128, seed, &n_vocab);
    RunningWorker w1(file), w2(file);
    std::mt19937_64 rng(seed + 1);

    const std::vector<std::vector<LayerRange>> plans = {
        {{0, 1}, {1, 2}, {2, 5}}, {{0, 3}, {3, 4}, {4, 5}}, {}  // uneven both ways, and planned from memory
    };
    for (const auto& plan : plans) {
        for (int n_batch : {4, 64}) {
            CAPTURE(n_batch);
            CAPTURE(plan.size());
            strata::exec::ContextParams cp;
            cp.n_ctx = 96;
            cp.n_threads = 1;
            strata::exec::LocalSequence local(*file, cp, greedy());
            Head head(file, identity(), head_options({w1.port(), w2.port()}, plan, n_batch), greedy());

            // Prefill longer than a micro-batch, every row's logits.
            const auto prompt = random_tokens(rng, 11, n_vocab);
            std::vector<float> want, got;
            local.decode(prompt, true, &want);
            head.decode(prompt, true, &got);
            REQUIRE(got.size() == want.size());
            float max_diff = 0;
            for (size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, std::abs(got[i] - want[i]));
            CHECK(max_diff == 0.0f);  // the same code on the same rows: bit-identical

            // Greedy continuation: token ids only on the wire.
            int32_t a = local.sample(0, nullptr), b = head.sample(0, nullptr);
            for (int step = 0; step < 6; ++step) {
                REQUIRE(a == b);
                const int32_t t = a;
                a = local.decode_and_sample({&t, 1}, 0, nullptr);
                b = head.decode_and_sample({&t, 1}, 0, nullptr);
            }
            CHECK(a == b);
            CHECK(head.n_past() == local.n_past());

            // Seeded sampling with penalties, and the top log-probabilities, after a reset.
            strata::sample::SamplerParams sp;
            sp.temperature = 0.9f;
            sp.top_k = 20;
            sp.repeat_penalty = 1.3f;
            sp.seed = seed;
            local.reset();
            head.reset();
            local.set_sampling(sp);
            head.set_sampling(sp);
            std::vector<strata::sample::TokenLogprob> top_local, top_head;
            a = local.decode_and_sample(prompt, 5, &top_local);
            b = head.decode_and_sample(prompt, 5, &top_head);
            for (int step = 0; step < 8; ++step) {
                REQUIRE(a == b);
                REQUIRE(top_local.size() == top_head.size());
                for (size_t i = 0; i < top_local.size(); ++i) {
                    CHECK(top_local[i].token == top_head[i].token);
                    CHECK(top_local[i].logprob == top_head[i].logprob);
                }
                const int32_t t = a;
                a = local.decode_and_sample({&t, 1}, 5, &top_local);
                b = head.decode_and_sample({&t, 1}, 5, &top_head);
            }
            CHECK(a == b);
        }
    }
}

TEST_CASE("pipeline head: f16 and bf16 hidden states stay within a stated tolerance of one process") {
    const uint64_t seed = strata::test::test_seed();
    int64_t n_vocab = 0;
    const auto file = synth_llama(4, 128, seed, &n_vocab);
    RunningWorker w1(file), w2(file);
    std::mt19937_64 rng(seed);
    const auto prompt = random_tokens(rng, 13, n_vocab);
    strata::exec::ContextParams cp;
    cp.n_ctx = 96;
    cp.n_threads = 1;
    strata::exec::LocalSequence local(*file, cp, greedy());
    std::vector<float> want;
    local.decode(prompt, true, &want);
    // f16 keeps 11 significant bits of each hidden value, bf16 8: relative RMS error bounds.
    for (auto [dtype, tolerance] : {std::pair{strata::transport::DType::f16, 2e-3},
                                    std::pair{strata::transport::DType::bf16, 2e-2}}) {
        auto o = head_options({w1.port(), w2.port()}, {{0, 1}, {1, 3}, {3, 4}}, 4);
        o.wire_dtype = dtype;
        Head head(file, identity(), o, greedy());
        std::vector<float> got;
        head.decode(prompt, true, &got);
        REQUIRE(got.size() == want.size());
        double err = 0, norm = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            err += double(got[i] - want[i]) * double(got[i] - want[i]);
            norm += double(want[i]) * double(want[i]);
        }
        const double rel = std::sqrt(err / norm);
        MESSAGE("wire type " << int(dtype) << ": relative RMS logit difference " << rel);
        CHECK(rel > 0.0);
        CHECK(rel < tolerance);
    }
}

TEST_CASE("pipeline head: refusals leave the sequence usable; a stopped worker fails its stage, reconnect recovers") {
    const uint64_t seed = strata::test::test_seed();
    int64_t n_vocab = 0;
    const auto file = synth_llama(3, 64, seed, &n_vocab);
    auto w1 = std::make_unique<RunningWorker>(file);
    auto w2 = std::make_unique<RunningWorker>(file);
    const uint16_t port2 = w2->port();
    Head head(file, identity(), head_options({w1->port(), port2}, {{0, 1}, {1, 2}, {2, 3}}, 4), greedy());
    std::mt19937_64 rng(seed);

    // Too long for the context: refused before anything runs, nothing changes.
    const auto too_long = random_tokens(rng, 97, n_vocab);
    try {
        head.decode(too_long, false, nullptr);
        FAIL("an overflowing decode was accepted");
    } catch (const strata::Error& e) {
        CHECK(e.status() == strata::Status::context_overflow);
    }
    CHECK(head.n_past() == 0);
    const auto prompt = random_tokens(rng, 9, n_vocab);
    const int32_t first = head.decode_and_sample(prompt, 0, nullptr);
    CHECK(head.n_past() == 9);

    // The last worker goes away: the next call names stage 2 within the peer timeout.
    w2->stop();
    const auto t0 = std::chrono::steady_clock::now();
    try {
        head.decode_and_sample({&first, 1}, 0, nullptr);
        FAIL("a decode through a stopped worker succeeded");
    } catch (const strata::Error& e) {
        CHECK(e.status() == strata::Status::stage_failed);
        CHECK(std::string(e.what()).find("stage 2") != std::string::npos);
    }
    CHECK(std::chrono::steady_clock::now() - t0 < 3s);
    CHECK(head.failed());
    try {
        head.decode_and_sample({&first, 1}, 0, nullptr);  // stays failed, fast
        FAIL("a failed pipeline accepted a call");
    } catch (const strata::Error& e) {
        CHECK(e.status() == strata::Status::stage_failed);
    }

    // Reconnecting while the worker is still down fails, naming it, and leaves the head usable.
    try {
        head.reconnect();
        FAIL("a reconnect to a stopped worker succeeded");
    } catch (const strata::Error& e) {
        CHECK(std::string(e.what()).find(std::to_string(port2)) != std::string::npos);
    }
    CHECK(head.failed());
    CHECK(head.n_ctx() == 96);
    CHECK(head.n_past() == 0);

    // Restarted on the same port: reconnect, and the sequence starts again from empty.
    w2 = std::make_unique<RunningWorker>(file, port2);
    head.reconnect();
    CHECK_FALSE(head.failed());
    CHECK(head.n_past() == 0);
    const int32_t again = head.decode_and_sample(prompt, 0, nullptr);
    CHECK(again == first);
}

TEST_CASE("pipeline head: a worker whose recurrent (KDA) layers differ from the head's reading is refused by layer") {
    // The same identity on both sides (the tests' workers take kIdentityHex), different files: a
    // kimi-linear (KDA layers 0 and 1, MLA layer 2) against a llama of three layers, each way.
    int64_t n_vocab = 0;
    const std::shared_ptr<const strata::gguf::ModelFile> kimi = strata::test::tiny_kimi(7);
    const auto llama = synth_llama(3, 64, strata::test::test_seed(), &n_vocab);
    struct Case {
        std::shared_ptr<const strata::gguf::ModelFile> head, worker;
        const char* want;
    };
    for (const Case& c : {Case{kimi, llama, "layer 1 recurrent (KDA) for the head only"},
                          Case{llama, kimi, "layer 1 recurrent (KDA) for the worker only"}}) {
        CAPTURE(c.want);
        RunningWorker w(c.worker);
        try {
            Head head(c.head, identity(), head_options({w.port()}, {{0, 1}, {1, 3}}, 4), greedy());
            FAIL("a worker with other recurrent layers was accepted");
        } catch (const strata::Error& e) {
            CHECK(e.status() == strata::Status::refused);
            const std::string what = e.what();
            CHECK(what.find("stage 1") != std::string::npos);
            CHECK(what.find(c.want) != std::string::npos);
        }
    }
    // The same model on both sides goes through, and the plan lists what the worker reported.
    RunningWorker w(kimi);
    Head head(kimi, identity(), head_options({w.port()}, {{0, 1}, {1, 3}}, 4), greedy());
    const auto plan = nlohmann::json::parse(head.plan_json());
    CHECK(plan["stages"][0]["recurrent_layers"] == nlohmann::json::array({0}));
    CHECK(plan["stages"][1]["recurrent_layers"] == nlohmann::json::array({1}));
    CHECK(plan["stages"][1]["reported"]["recurrent_layers"] == nlohmann::json::array({1}));
}

TEST_CASE("pipeline head: planning from memory takes a GPU worker's device scratch off its free memory") {
    // Three stages reporting the same free memory; the last worker says its backend is "cuda" (its
    // layers still run on the CPU here: only the planning is under test).
    int64_t n_vocab = 0;
    const auto file = synth_llama(6, 64, strata::test::test_seed(), &n_vocab);
    constexpr uint64_t kFree = uint64_t(1) << 30;
    auto reports = [](const char* backend) {
        return [backend](WorkerOptions& o) {
            o.stage.memory_budget = kFree;
            o.stage.backend = backend;
        };
    };
    RunningWorker cpu(file, 0, reports("cpu")), gpu(file, 0, reports("cuda"));
    auto options = head_options({cpu.port(), gpu.port()}, {}, 8);
    options.context.memory_budget = kFree;
    auto ranges = [&](const HeadOptions& o, std::string* planned_by) {
        Head head(file, identity(), o, greedy());
        const auto plan = nlohmann::json::parse(head.plan_json());
        *planned_by = plan["planned_by"].get<std::string>();
        std::vector<std::pair<int, int>> r;
        for (const auto& stage : plan["stages"]) r.emplace_back(stage["layers"][0].get<int>(), stage["layers"][1].get<int>());
        return r;
    };
    std::string planned_by;
    // Without the device plan (a library without CUDA) the three split evenly.
    CHECK(ranges(options, &planned_by) == std::vector<std::pair<int, int>>{{0, 2}, {2, 4}, {4, 6}});
    CHECK(planned_by.find("GPU") == std::string::npos);
    // With it, the GPU stage keeps half its memory for scratch: it gets half the others' share.
    std::vector<strata::exec::ContextParams> asked;
    options.gpu_stage_scratch_bytes = [&](const strata::gguf::ModelFile&, const strata::exec::ContextParams& p) {
        asked.push_back(p);
        return kFree / 2;
    };
    CHECK(ranges(options, &planned_by) == std::vector<std::pair<int, int>>{{0, 3}, {3, 5}, {5, 6}});
    CHECK(planned_by.find("GPU stages less " + std::to_string(kFree / 2) + " bytes") != std::string::npos);
    REQUIRE(asked.size() == 1);  // once per plan, for every layer a worker could get
    CHECK(asked[0].first_layer == 1);
    CHECK(asked[0].last_layer == 6);
    CHECK(asked[0].n_ctx == 96);
    CHECK(asked[0].n_batch == 8);
}

#endif  // STRATA_TRANSPORT_HAS_TCP
