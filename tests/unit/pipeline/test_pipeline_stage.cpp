// pipeline::Stage on a synthetic llama: a head Context [0, a) followed by stages [a, b) and
// [b, n) gives exactly the logits of one Context over the whole model; requests that do not
// fit are refused and leave the stage as it was.
#include <doctest/doctest.h>

#if STRATA_TRANSPORT_HAS_TCP

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "exec/context/context.hpp"
#include "model/hparams.hpp"
#include "pipeline/recurrent_layers.hpp"
#include "pipeline/stage.hpp"
#include "pipeline/wire_tensor.hpp"
#include "quant/half.hpp"
#include "sample/sequence_sampler.hpp"
#include "test_exec_synth.hpp"
#include "test_kimi_synth.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace strata;
using transport::ForwardOutput;

namespace {

constexpr int kLayers = 5;
constexpr uint64_t kBudget = uint64_t(1) << 34;  // tests do not depend on this machine's free memory

std::shared_ptr<gguf::ModelFile> synth_model(uint64_t seed) {
    test::SynthSpec s;
    s.n_layer = kLayers;
    s.n_vocab = 96;
    return test::make_model(s, seed);
}

std::vector<int32_t> random_tokens(std::mt19937_64& rng, size_t n, int64_t n_vocab) {
    std::uniform_int_distribution<int32_t> d(0, int32_t(n_vocab - 1));
    std::vector<int32_t> t(n);
    for (auto& x : t) x = d(rng);
    return t;
}

exec::ContextParams context_params(int64_t n_ctx, int first = 0, int last = -1) {
    exec::ContextParams p;
    p.n_ctx = n_ctx;
    p.n_threads = 2;
    p.memory_budget = kBudget;
    p.first_layer = first;
    p.last_layer = last;
    return p;
}

transport::StageConfigure configure(uint32_t begin, uint32_t end, uint32_t n_ctx = 32, uint32_t kv = 0) {
    return {begin, end, kv, n_ctx, 8};
}

pipeline::StageOptions stage_options() {
    pipeline::StageOptions o;
    o.n_threads = 2;
    o.memory_budget = kBudget;
    return o;
}

transport::Tensor f32_tensor(const std::vector<float>& v, uint64_t rows, uint64_t cols) {
    transport::Tensor t{transport::DType::f32, {rows, cols}, std::vector<uint8_t>(v.size() * 4)};
    std::memcpy(t.data.data(), v.data(), t.data.size());
    return t;
}

std::vector<float> floats_of(const transport::Tensor& t) {
    REQUIRE(t.dtype == transport::DType::f32);
    std::vector<float> v(t.data.size() / 4);
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
}

transport::Forward forward_msg(uint64_t position, ForwardOutput output, const std::vector<int32_t>& tokens,
                               const std::vector<float>& hidden, int64_t n_embd) {
    transport::Forward f;
    f.position = position;
    f.output = output;
    f.tokens = tokens;
    f.hidden = f32_tensor(hidden, tokens.size(), uint64_t(n_embd));
    return f;
}

// The status a call throws (ok when it does not throw).
Status status_of(const std::function<void()>& call, std::string* message = nullptr) {
    try {
        call();
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.status();
    }
    return Status::ok;
}

// Head [0, a) in this process, then one stage per further boundary.
struct SplitPipeline {
    exec::Context head;
    std::vector<std::unique_ptr<pipeline::Stage>> stages;

    SplitPipeline(const gguf::ModelFile& f, std::vector<int> bounds, int64_t n_ctx)
        : head(f, context_params(n_ctx, 0, bounds.front())) {
        bounds.push_back(kLayers);
        for (size_t i = 0; i + 1 < bounds.size(); ++i)
            stages.push_back(std::make_unique<pipeline::Stage>(
                f, configure(uint32_t(bounds[i]), uint32_t(bounds[i + 1]), uint32_t(n_ctx)), stage_options()));
    }

    // Runs tokens at the head's n_past through every stage; the last answers `output`.
    transport::Message run(const std::vector<int32_t>& tokens, ForwardOutput output, uint32_t n_top = 0) {
        const uint64_t position = uint64_t(head.n_past());
        std::vector<float> h(size_t(head.output_floats(int64_t(tokens.size()), false)));
        head.decode(tokens, h.data());
        for (size_t i = 0; i + 1 < stages.size(); ++i) {
            auto m = stages[i]->forward(forward_msg(position, ForwardOutput::hidden, tokens, h, head.n_embd()));
            REQUIRE(std::holds_alternative<transport::Tensor>(m));
            const auto& t = std::get<transport::Tensor>(m);
            CHECK(t.dims == std::vector<uint64_t>{tokens.size(), uint64_t(head.n_embd())});
            h = floats_of(t);
        }
        auto f = forward_msg(position, output, tokens, h, head.n_embd());
        f.n_top = n_top;
        return stages.back()->forward(f);
    }
};

}  // namespace

TEST_CASE("head [0,a) + stages [a,b) and [b,n) give the logits of one context, bit for bit, for every split") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    auto f = synth_model(seed);
    for (const auto& bounds : std::vector<std::vector<int>>{{1, 2}, {1, 4}, {2, 3}, {3, 4}, {4}, {1}, {2, 4}}) {
        CAPTURE(bounds.size());
        CAPTURE(bounds.front());
        CAPTURE(bounds.back());
        std::mt19937_64 rng(seed + uint64_t(bounds.front() * 10 + bounds.back()));
        exec::Context whole(*f, context_params(32));
        SplitPipeline pipe(*f, bounds, 32);
        CHECK(pipe.stages.back()->is_last());
        CHECK_FALSE(pipe.stages.front()->is_first());
        // A prefill, single-token decode steps, then another prefill.
        for (size_t n : {11, 1, 1, 1, 4}) {  // 11: two micro-batches of 8 on the stages
            const auto tokens = random_tokens(rng, n, whole.n_vocab());
            std::vector<float> ref(size_t(whole.output_floats(int64_t(n), true)));
            whole.decode(tokens, ref.data(), true);
            auto m = pipe.run(tokens, ForwardOutput::logits_all);
            REQUIRE(std::holds_alternative<transport::Tensor>(m));
            const auto& t = std::get<transport::Tensor>(m);
            CHECK(t.dims == std::vector<uint64_t>{n, uint64_t(whole.n_vocab())});
            const auto got = floats_of(t);
            REQUIRE(got.size() == ref.size());
            CHECK(std::memcmp(got.data(), ref.data(), ref.size() * 4) == 0);
            for (const auto& s : pipe.stages) CHECK(s->n_past() == whole.n_past());
        }
        // logits_last is the last row of logits_all.
        const auto tokens = random_tokens(rng, 3, whole.n_vocab());
        std::vector<float> ref(size_t(whole.n_vocab()));
        whole.decode(tokens, ref.data());
        auto m = pipe.run(tokens, ForwardOutput::logits_last);
        const auto& t = std::get<transport::Tensor>(m);
        CHECK(t.dims == std::vector<uint64_t>{1, uint64_t(whole.n_vocab())});
        CHECK(floats_of(t) == ref);
    }
}

// A CPU context that counts the forwards it runs: stands in for a GPU context made by a factory.
class CountingContext : public exec::Context {
public:
    CountingContext(const gguf::ModelFile& f, const exec::ContextParams& p, int& forwards)
        : exec::Context(f, p), forwards_(forwards) {}
    void forward_hidden(const float* in, int64_t n, float* out, bool all) {
        ++forwards_;
        exec::Context::forward_hidden(in, n, out, all);
    }

private:
    int& forwards_;
};

TEST_CASE("a stage runs its layers in the context StageOptions::make_context makes, with the stage's range") {
    auto f = synth_model(test::test_seed());
    int forwards = 0;
    std::vector<std::pair<int, int>> ranges;
    pipeline::StageOptions o = stage_options();
    o.make_context = [&](const gguf::ModelFile& file, const exec::ContextParams& p) -> std::unique_ptr<exec::StageContext> {
        ranges.emplace_back(p.first_layer, p.last_layer);
        return std::make_unique<exec::StageContextOf<CountingContext>>(file, p, forwards);
    };
    pipeline::Stage made(*f, configure(2, kLayers), o);
    pipeline::Stage plain(*f, configure(2, kLayers), stage_options());
    CHECK(ranges == std::vector<std::pair<int, int>>{{2, kLayers}});
    CHECK(made.ready().total_bytes == plain.ready().total_bytes);

    exec::Context head(*f, context_params(32, 0, 2));
    const std::vector<int32_t> tokens{3, 14, 15, 92, 6};
    std::vector<float> h(size_t(head.output_floats(int64_t(tokens.size()), false)));
    head.decode(tokens, h.data());
    const auto msg = forward_msg(0, ForwardOutput::logits_all, tokens, h, head.n_embd());
    const auto a = made.forward(msg), b = plain.forward(msg);
    CHECK(forwards == 1);
    REQUIRE(std::holds_alternative<transport::Tensor>(a));
    REQUIRE(std::holds_alternative<transport::Tensor>(b));
    CHECK(floats_of(std::get<transport::Tensor>(a)) == floats_of(std::get<transport::Tensor>(b)));
    CHECK(made.n_past() == int64_t(tokens.size()));

    // A factory that cannot make its context (a GPU worker whose device went away) fails the stage
    // with the factory's status and message.
    o.make_context = [](const gguf::ModelFile&, const exec::ContextParams&) -> std::unique_ptr<exec::StageContext> {
        fail(Status::unsupported, "no usable CUDA device: a test's reason");
    };
    std::string message;
    CHECK(status_of([&] { pipeline::Stage s(*f, configure(2, kLayers), o); }, &message) == Status::unsupported);
    CHECK(message.find("a test's reason") != std::string::npos);
}

TEST_CASE("ready() reports the stage's memory plan") {
    auto f = synth_model(test::test_seed());
    pipeline::Stage middle(*f, configure(1, 3), stage_options());
    auto p = context_params(32, 1, 3);
    p.n_batch = 8;  // configure() asks for micro-batches of 8: scratch is sized by them
    exec::Context same(*f, p);
    const auto r = middle.ready();
    CHECK(r.weight_bytes == same.plan().weight_bytes);
    CHECK(r.kv_bytes == same.plan().kv_bytes);
    CHECK(r.total_bytes == same.plan().total_bytes);
    CHECK(r.budget_bytes == kBudget);
    CHECK(middle.n_embd() == 256);
    CHECK_FALSE(middle.is_last());
    CHECK(r.layer_begin == 1);
    CHECK(r.layer_end == 3);
    CHECK(r.recurrent_layers.empty());  // a llama keeps a KV cache in every layer
}

TEST_CASE("ready() names the recurrent (KDA) layers of a kimi-linear stage, in the model's reading") {
    auto f = test::tiny_kimi(7);  // KDA layers 0 and 1, MLA layer 2
    struct Case {
        uint32_t begin, end;
        std::vector<uint32_t> want;
    };
    for (const Case& c : {Case{1, 3, {1}}, Case{2, 3, {}}, Case{1, 2, {1}}}) {
        const uint32_t begin = c.begin, end = c.end;
        const std::vector<uint32_t>& want = c.want;
        CAPTURE(begin);
        CAPTURE(end);
        pipeline::Stage stage(*f, configure(begin, end), stage_options());
        const auto r = stage.ready();
        CHECK(r.layer_begin == begin);
        CHECK(r.layer_end == end);
        CHECK(r.recurrent_layers == want);
        CHECK(r.recurrent_layers == pipeline::recurrent_layers(model::read_hparams(*f), begin, end));
    }
}

TEST_CASE("recurrent_layers_difference names each layer that differs and the side it is recurrent on") {
    using pipeline::recurrent_layers_difference;
    const std::vector<uint32_t> none, a{1, 3, 4}, b{1, 4, 6, 7};
    CHECK(recurrent_layers_difference(a, a).empty());
    CHECK(recurrent_layers_difference(none, none).empty());
    CHECK(recurrent_layers_difference(a, b) ==
          "layer 3 recurrent (KDA) for the head only; layers 6, 7 recurrent (KDA) for the worker only");
    CHECK(recurrent_layers_difference(none, b) == "layers 1, 4, 6, 7 recurrent (KDA) for the worker only");
    CHECK(recurrent_layers_difference(a, none) == "layers 1, 3, 4 recurrent (KDA) for the head only");
}

TEST_CASE("a position before n_past truncates first; a position past it is refused as out of order") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    auto f = synth_model(seed);
    std::mt19937_64 rng(seed + 1);
    SplitPipeline pipe(*f, {2}, 16);
    auto& stage = *pipe.stages.back();
    exec::Context whole(*f, context_params(16));
    const auto prompt = random_tokens(rng, 6, whole.n_vocab());
    std::vector<float> ref(size_t(whole.output_floats(6, true)));
    whole.decode(prompt, ref.data(), true);
    (void)pipe.run(prompt, ForwardOutput::none);
    CHECK(stage.n_past() == 6);

    const std::vector<float> hidden(256, 0.5f);
    std::string message;
    CHECK(status_of([&] { stage.forward(forward_msg(8, ForwardOutput::logits_last, {1}, hidden, 256)); }, &message) ==
          Status::invalid_argument);
    CHECK(message == "out of order: position 8 but the stage holds 6 tokens");
    CHECK(stage.n_past() == 6);

    // Rewind both to position 3 and continue with other tokens: same logits as the whole model.
    pipe.head.truncate(3);
    whole.truncate(3);
    const auto other = random_tokens(rng, 2, whole.n_vocab());
    std::vector<float> ref2(size_t(whole.output_floats(2, true)));
    whole.decode(other, ref2.data(), true);
    auto m = pipe.run(other, ForwardOutput::logits_all);
    CHECK(floats_of(std::get<transport::Tensor>(m)) == ref2);
    CHECK(stage.n_past() == 5);

    // After a truncation the kept row is gone until the next forward.
    pipe.head.truncate(2);
    std::vector<float> h(size_t(pipe.head.output_floats(1, false)));
    pipe.head.decode({&other[0], 1}, h.data());
    auto done = stage.forward(forward_msg(2, ForwardOutput::none, {other[0]}, h, 256));
    CHECK(std::holds_alternative<transport::Done>(done));
    CHECK(stage.n_past() == 3);
    CHECK(status_of([&] { stage.sample(0); }) == Status::ok);
}

TEST_CASE("context overflow is refused with context_overflow and the stage unchanged") {
    auto f = synth_model(test::test_seed());
    pipeline::Stage stage(*f, configure(2, kLayers, 8), stage_options());
    const std::vector<float> h6(6 * 256, 0.25f), h3(3 * 256, 0.25f);
    (void)stage.forward(forward_msg(0, ForwardOutput::none, {1, 2, 3, 4, 5, 6}, h6, 256));
    CHECK(status_of([&] { stage.forward(forward_msg(6, ForwardOutput::none, {1, 2, 3}, h3, 256)); }) ==
          Status::context_overflow);
    CHECK(stage.n_past() == 6);
    // From an earlier position the same tokens fit (the tail is truncated first).
    CHECK(status_of([&] { stage.forward(forward_msg(5, ForwardOutput::none, {1, 2, 3}, h3, 256)); }) == Status::ok);
    CHECK(stage.n_past() == 8);
}

TEST_CASE("wrong shapes, sizes, token ids and non-finite hidden states are refused before anything runs") {
    auto f = synth_model(test::test_seed());
    pipeline::Stage stage(*f, configure(2, kLayers), stage_options());
    const std::vector<float> h2(2 * 256, 0.1f);
    (void)stage.forward(forward_msg(0, ForwardOutput::none, {1, 2}, h2, 256));
    REQUIRE(stage.n_past() == 2);

    auto good = [&] { return forward_msg(2, ForwardOutput::logits_last, {3, 4}, h2, 256); };
    std::vector<std::pair<const char*, std::function<void(transport::Forward&)>>> breakages = {
        {"n_embd + 1 columns", [](transport::Forward& m) { m.hidden.dims = {1, 512}; }},
        {"one dimension", [](transport::Forward& m) { m.hidden.dims = {512}; }},
        {"rows != tokens", [](transport::Forward& m) { m.tokens.push_back(5); }},
        {"short data", [](transport::Forward& m) { m.hidden.data.resize(m.hidden.data.size() - 4); }},
        {"no tokens", [](transport::Forward& m) {
             m.tokens.clear();
             m.hidden.dims = {0, 256};
             m.hidden.data.clear();
         }},
        {"negative token", [](transport::Forward& m) { m.tokens[1] = -1; }},
        {"token past the vocabulary", [](transport::Forward& m) { m.tokens[0] = 96; }},
        {"NaN", [](transport::Forward& m) {
             const float nan = std::numeric_limits<float>::quiet_NaN();
             std::memcpy(m.hidden.data.data() + 300 * 4, &nan, 4);
         }},
        {"infinity in f16", [](transport::Forward& m) {
             m.hidden.dtype = transport::DType::f16;
             m.hidden.data.assign(2 * 256 * 2, 0);
             m.hidden.data[2] = 0x00;
             m.hidden.data[3] = 0x7c;
         }},
        {"unknown output", [](transport::Forward& m) { m.output = ForwardOutput(9); }},
        {"hidden output on the last stage", [](transport::Forward& m) { m.output = ForwardOutput::hidden; }},
        {"n_top past the maximum", [](transport::Forward& m) {
             m.output = ForwardOutput::sample;
             m.n_top = transport::kMaxTopLogprobs + 1;
         }},
    };
    for (auto& [what, breakage] : breakages) {
        CAPTURE(what);
        auto m = good();
        breakage(m);
        CHECK(status_of([&] { stage.forward(m); }) == Status::invalid_argument);
        CHECK(stage.n_past() == 2);
    }
    CHECK(status_of([&] { stage.forward(good()); }) == Status::ok);
}

TEST_CASE("f16 and bf16 hidden states equal their values sent as f32") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    auto f = synth_model(seed);
    std::mt19937_64 rng(seed + 2);
    const auto h = test::synth_normal(rng, 3 * 256, 1.0);
    for (auto dtype : {transport::DType::f16, transport::DType::bf16}) {
        pipeline::Stage narrow(*f, configure(1, 3), stage_options());
        pipeline::Stage wide(*f, configure(1, 3), stage_options());
        transport::Forward m = forward_msg(0, ForwardOutput::hidden, {1, 2, 3}, h, 256);
        m.hidden.dtype = dtype;
        m.hidden.data.resize(h.size() * 2);
        std::vector<float> rounded(h.size());
        for (size_t i = 0; i < h.size(); ++i) {
            const uint16_t bits = dtype == transport::DType::f16 ? quant::f32_to_f16(h[i]) : quant::f32_to_bf16(h[i]);
            std::memcpy(m.hidden.data.data() + 2 * i, &bits, 2);
            rounded[i] = dtype == transport::DType::f16 ? quant::f16_to_f32(bits) : quant::bf16_to_f32(bits);
        }
        auto a = narrow.forward(m);
        auto b = wide.forward(forward_msg(0, ForwardOutput::hidden, {1, 2, 3}, rounded, 256));
        // A stage answers in the type it was sent: the f32 answer, rounded the same way.
        const auto& got = std::get<transport::Tensor>(a);
        const auto& f32 = std::get<transport::Tensor>(b);
        CHECK(got.dtype == dtype);
        std::vector<float> wide_out(f32.data.size() / 4);
        std::memcpy(wide_out.data(), f32.data.data(), f32.data.size());
        CHECK(got == pipeline::encode_hidden(wide_out, f32.dims[0], f32.dims[1], dtype));
    }
}

TEST_CASE("outputs, sampling and configurations a stage cannot serve are refused") {
    auto f = synth_model(test::test_seed());
    pipeline::Stage middle(*f, configure(1, 3), stage_options());
    const std::vector<float> h(256, 0.1f);
    for (auto out : {ForwardOutput::logits_last, ForwardOutput::logits_all, ForwardOutput::sample, ForwardOutput::none})
        CHECK(status_of([&] { middle.forward(forward_msg(0, out, {1}, h, 256)); }) == Status::invalid_argument);
    CHECK(middle.n_past() == 0);
    CHECK(status_of([&] { middle.set_sampling({}); }) == Status::invalid_argument);
    CHECK(status_of([&] { middle.sample(0); }) == Status::invalid_argument);

    pipeline::Stage last(*f, configure(3, kLayers), stage_options());
    CHECK(status_of([&] { last.sample(0); }) == Status::invalid_argument);  // no row yet
    transport::SetSampling bad;
    bad.temperature = -1;
    CHECK(status_of([&] { last.set_sampling(bad); }) == Status::invalid_argument);

    std::string message;
    auto build = [&](transport::StageConfigure c) {
        return status_of([&] { pipeline::Stage s(*f, c, stage_options()); }, &message);
    };
    CHECK(build(configure(0, 2)) == Status::invalid_argument);
    CHECK(message.find("layer 0 runs on the head") != std::string::npos);
    CHECK(build(configure(3, 3)) == Status::invalid_argument);
    CHECK(build(configure(3, kLayers + 1)) == Status::invalid_argument);
    CHECK(build(configure(3, 0xffffffffu)) == Status::invalid_argument);
    CHECK(build(configure(1, 2, 0)) == Status::invalid_argument);
    CHECK(build(configure(1, 2, 32, 7)) == Status::invalid_argument);
    CHECK(build(transport::StageConfigure{1, 2, 0, 32, 0}) == Status::invalid_argument);
    CHECK(build(configure(1, 2, 32, 1)) == Status::ok);  // q8_0 (head_dim 64)
}

TEST_CASE("the last stage draws the tokens and top log-probabilities of a local SequenceSampler") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    auto f = synth_model(seed);
    std::mt19937_64 rng(seed + 3);
    exec::Context whole(*f, context_params(32));
    SplitPipeline pipe(*f, {2, 4}, 32);

    transport::SetSampling s;
    s.temperature = 0.9f;
    s.top_k = 20;
    s.top_p = 0.95f;
    s.min_p = 0.02f;
    s.repeat_penalty = 1.3f;
    s.repeat_last_n = 16;
    s.seed = seed;
    pipe.stages.back()->set_sampling(s);
    sample::SequenceSampler local({s.temperature, s.top_k, s.top_p, s.min_p, s.repeat_penalty, s.repeat_last_n, s.seed});

    std::vector<int32_t> tokens = random_tokens(rng, 5, whole.n_vocab());
    std::vector<float> row(size_t(whole.n_vocab()));
    for (int step = 0; step < 12; ++step) {
        CAPTURE(step);
        whole.decode(tokens, row.data());
        local.decoded(tokens, row);
        std::vector<sample::TokenLogprob> top;
        const int32_t want = local.sample(5, &top);
        transport::Sampled got;
        if (step % 2 == 0) {  // sampled in the forward ...
            auto m = pipe.run(tokens, ForwardOutput::sample, 5);
            REQUIRE(std::holds_alternative<transport::Sampled>(m));
            got = std::get<transport::Sampled>(m);
        } else {  // ... or by a separate request after a forward that keeps the row
            auto m = pipe.run(tokens, ForwardOutput::none);
            REQUIRE(std::holds_alternative<transport::Done>(m));
            got = pipe.stages.back()->sample(5);
        }
        CHECK(got.token == want);
        REQUIRE(got.top.size() == top.size());
        for (size_t i = 0; i < top.size(); ++i) {
            CHECK(got.top[i].token == top[i].token);
            CHECK(got.top[i].logprob == top[i].logprob);
        }
        tokens = {want};
    }
}

#endif  // STRATA_TRANSPORT_HAS_TCP
