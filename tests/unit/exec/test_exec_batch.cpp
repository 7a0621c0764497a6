// Batched decode (exec::Context with n_seq slots, decode_batch): every slot's logits are
// bit-identical to the same tokens decoded by a Context of its own, on tiny synthetic llama,
// qwen3, deepseek2 (MLA + MoE) and kimi-linear (KDA + MLA + MoE) models, through random
// interleavings of prefill chunks and one-token steps across the slots, with resets and
// truncations of single slots; bad batches run nothing in any slot.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "exec/sequence/batched_sequence.hpp"
#include "exec/context/context.hpp"
#include "gguf/model_file.hpp"
#include "gguf/writer.hpp"
#include "quant/formats.hpp"
#include "test_exec_synth.hpp"
#include "test_kimi_synth.hpp"
#include "tiny_deepseek2.hpp"
#include "util/error.hpp"

using namespace strata;

namespace {

exec::ContextParams batch_params(int64_t n_ctx, int32_t n_seq, int64_t n_batch) {
    exec::ContextParams p;
    p.n_ctx = n_ctx;
    p.n_threads = 2;
    p.n_seq = n_seq;
    p.n_batch = n_batch;
    p.memory_budget = uint64_t(1) << 34;  // tests do not depend on this machine's free memory
    return p;
}

// A tiny deepseek2 model (tiny_deepseek2.hpp) with weights from `seed`.
std::unique_ptr<gguf::ModelFile> tiny_deepseek2(uint64_t seed) {
    test::TinyDs2 spec;
    spec.vocab = 24;
    spec.seed = seed;
    return spec.build();
}

std::unique_ptr<gguf::ModelFile> tiny_llama_family(const std::string& arch, uint64_t seed) {
    test::SynthSpec s;
    s.arch = arch;
    s.n_embd = 64;
    s.n_ff = 128;
    s.n_vocab = 48;
    return test::make_model(s, seed);
}

bool same_bits(const float* a, const float* b, int64_t n) { return std::memcmp(a, b, size_t(n) * sizeof(float)) == 0; }

// A random batch over the slots, each with room for its tokens: a one-token step or a prefill
// chunk of 2..max_chunk tokens, slots in random order.
struct Batch {
    std::vector<std::vector<int32_t>> tokens;
    std::vector<exec::BatchEntry> entries;
};

Batch random_batch(std::mt19937_64& rng, const exec::Context& ctx, int64_t max_chunk) {
    Batch b;
    std::vector<int32_t> order(size_t(ctx.n_seq()));
    for (int32_t i = 0; i < ctx.n_seq(); ++i) order[size_t(i)] = i;
    std::shuffle(order.begin(), order.end(), rng);
    const size_t n_entries = 1 + rng() % order.size();
    b.tokens.reserve(n_entries);
    for (size_t i = 0; i < n_entries; ++i) {
        const int32_t seq = order[i];
        const int64_t room = ctx.n_ctx() - ctx.n_past(seq);
        if (room == 0) continue;
        const int64_t want = rng() % 2 ? 1 : 2 + int64_t(rng() % uint64_t(max_chunk - 1));
        std::vector<int32_t> t(size_t(std::min(want, room)));
        for (auto& x : t) x = int32_t(rng() % uint64_t(ctx.n_vocab()));
        b.tokens.push_back(std::move(t));
        b.entries.push_back({seq, b.tokens.back()});
    }
    return b;
}

// Drives a batched context and one context per slot through the same random steps and checks
// every slot's logits bit for bit. recurrent: truncation keeps all or nothing.
void check_batched_equals_alone(const gguf::ModelFile& file, uint64_t seed, bool recurrent) {
    std::mt19937_64 rng(seed);
    CAPTURE(seed);
    const int32_t n_seq = 4;
    const int64_t n_ctx = 40;
    // A micro-batch of 5 cuts batches across entries; the alone contexts run whole calls.
    exec::Context batched(file, batch_params(n_ctx, n_seq, 5));
    std::vector<std::unique_ptr<exec::Context>> alone;
    for (int32_t i = 0; i < n_seq; ++i) alone.push_back(std::make_unique<exec::Context>(file, batch_params(n_ctx, 1, 512)));
    const int64_t V = batched.n_vocab();
    std::vector<float> got, want(static_cast<size_t>(V));
    int compared = 0;
    for (int round = 0; round < 30; ++round) {
        CAPTURE(round);
        const uint64_t what = rng() % 10;
        if (what == 0) {  // one slot restarts or drops positions; the others must not notice
            const int32_t seq = int32_t(rng() % uint64_t(n_seq));
            const int64_t past = batched.n_past(seq);
            const int64_t to = recurrent ? 0 : int64_t(rng() % uint64_t(past + 1));
            if (rng() % 2) {
                batched.reset(seq);
                alone[size_t(seq)]->reset();
            } else {
                batched.truncate(seq, to);
                alone[size_t(seq)]->truncate(to);
            }
            continue;
        }
        if (what == 1 && batched.n_past(0) < n_ctx) {  // the single-sequence call addresses slot 0
            const std::vector<int32_t> t{int32_t(rng() % uint64_t(V))};
            got.resize(size_t(V));
            batched.decode(t, got.data());
            alone[0]->decode(t, want.data());
            CHECK(same_bits(got.data(), want.data(), V));
            ++compared;
            continue;
        }
        const Batch b = random_batch(rng, batched, 7);
        if (b.entries.empty()) {  // every chosen slot is full: start them over
            for (int32_t i = 0; i < n_seq; ++i) {
                batched.reset(i);
                alone[size_t(i)]->reset();
            }
            continue;
        }
        got.assign(b.entries.size() * size_t(V), 0.0f);
        batched.decode_batch(b.entries, got.data());
        for (size_t i = 0; i < b.entries.size(); ++i) {
            const int32_t seq = b.entries[i].seq;
            CAPTURE(seq);
            alone[size_t(seq)]->decode(b.entries[i].tokens, want.data());
            CHECK(same_bits(got.data() + i * size_t(V), want.data(), V));
            ++compared;
        }
        for (int32_t i = 0; i < n_seq; ++i) CHECK(batched.n_past(i) == alone[size_t(i)]->n_past());
    }
    CHECK(compared > 20);
}

}  // namespace

TEST_CASE("decode_batch: each slot's logits are bit-identical to the slot decoded alone (llama, qwen3)") {
    for (const char* arch : {"llama", "qwen3"}) {
        CAPTURE(arch);
        const auto file = tiny_llama_family(arch, 11);
        check_batched_equals_alone(*file, std::random_device{}(), false);
    }
}

TEST_CASE("decode_batch: bit-identical to alone on deepseek2 (latent attention, MoE)") {
    const auto file = tiny_deepseek2(5);
    check_batched_equals_alone(*file, std::random_device{}(), false);
}

TEST_CASE("decode_batch: bit-identical to alone on kimi-linear (KDA state and conv windows per slot)") {
    const auto file = test::tiny_kimi(3);
    check_batched_equals_alone(*file, std::random_device{}(), true);
}

TEST_CASE("decode_batch: a bad entry runs nothing in any slot") {
    const auto file = tiny_llama_family("llama", 2);
    exec::Context ctx(*file, batch_params(16, 3, 512));
    exec::Context ref(*file, batch_params(16, 1, 512));
    const int64_t V = ctx.n_vocab();
    std::vector<float> out(static_cast<size_t>(3 * V)), want(static_cast<size_t>(V));
    const std::vector<int32_t> a{1, 2, 3}, b{4}, bad{5, int32_t(V)}, long_run(14, 7), empty;
    ctx.decode_batch(std::vector<exec::BatchEntry>{{0, a}, {1, a}}, out.data());
    ref.decode(a, want.data());

    auto refused = [&](std::vector<exec::BatchEntry> entries, const std::string& says) {
        CAPTURE(says);
        try {
            ctx.decode_batch(entries, out.data());
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(e.status() == Status::invalid_argument);
            CHECK(std::string(e.what()).find(says) != std::string::npos);
        }
        CHECK(ctx.n_past(0) == 3);
        CHECK(ctx.n_past(1) == 3);
        CHECK(ctx.n_past(2) == 0);
    };
    refused({{0, b}, {3, b}}, "entry 1 (sequence 3)");
    refused({{-1, b}}, "entry 0 (sequence -1)");
    refused({{2, b}, {2, b}}, "appears twice");
    refused({{0, b}, {2, empty}}, "entry 1");
    refused({{2, b}, {0, bad}}, "out of range");
    refused({{2, b}, {1, long_run}}, "context overflow");  // 3 + 14 > 16: slot 2's step is not run either
    refused({}, "no entries");

    // The slots are as they were: the next step of slot 0 still matches the lone context.
    ctx.decode_batch(std::vector<exec::BatchEntry>{{2, b}, {0, b}}, out.data());
    ref.decode(b, want.data());
    CHECK(same_bits(out.data() + V, want.data(), V));
    CHECK(ctx.n_past(2) == 1);
    CHECK_THROWS_AS(ctx.n_past(3), std::out_of_range);
    CHECK_THROWS_AS(ctx.reset(3), Error);
    CHECK_THROWS_AS(ctx.truncate(-1, 0), Error);
}

TEST_CASE("decode_batch: needs the whole model; the KDA truncate rule holds per slot") {
    const auto file = test::tiny_kimi(4);
    exec::ContextParams p = batch_params(16, 2, 512);
    p.last_layer = 2;
    exec::Context first(*file, p);
    const std::vector<int32_t> t{1};
    std::vector<float> out(64);
    CHECK_THROWS_AS(first.decode_batch(std::vector<exec::BatchEntry>{{0, t}}, out.data()), Error);

    exec::Context ctx(*file, batch_params(16, 2, 512));
    std::vector<float> logits(size_t(2 * ctx.n_vocab()));
    const std::vector<int32_t> three{1, 2, 3};
    ctx.decode_batch(std::vector<exec::BatchEntry>{{0, three}, {1, three}}, logits.data());
    CHECK(!ctx.can_truncate(1, 2));
    CHECK_THROWS_AS(ctx.truncate(1, 2), Error);
    ctx.truncate(1, 0);
    CHECK(ctx.n_past(1) == 0);
    CHECK(ctx.n_past(0) == 3);
}

TEST_CASE("a context with n_seq slots plans the KV cache of every slot and says so") {
    const auto file = tiny_llama_family("llama", 3);
    exec::Context one(*file, batch_params(32, 1, 512));
    exec::Context three(*file, batch_params(32, 3, 512));
    CHECK(three.plan().kv_bytes == 3 * one.plan().kv_bytes);
    CHECK(three.plan().n_seq == 3);
    CHECK(three.plan().describe().find("3 sequences, configured context 32 each") != std::string::npos);
    CHECK(one.plan().describe().find("sequences") == std::string::npos);
    CHECK_THROWS_AS(exec::Context(*file, batch_params(32, 0, 512)), Error);

    const auto kimi = test::tiny_kimi(1);
    exec::Context k1(*kimi, batch_params(32, 1, 512)), k2(*kimi, batch_params(32, 2, 512));
    CHECK(k2.plan().state_bytes == 2 * k1.plan().state_bytes);
    CHECK(k2.plan().state_bytes > 0);
}

TEST_CASE("BatchedSequences: per-slot samplers and views; a batch feeds each slot's sampler") {
    const auto file = tiny_llama_family("qwen3", 9);
    sample::SamplerParams greedy;
    greedy.temperature = 0.0f;
    exec::BatchedSequences seqs(*file, batch_params(32, 3, 512), greedy);
    CHECK(seqs.n_seq() == 3);
    const std::vector<int32_t> a{3, 1, 4}, b{1, 5};
    std::vector<std::vector<float>> logits;
    seqs.decode_batch(std::vector<exec::BatchEntry>{{2, a}, {0, b}}, logits);
    REQUIRE(logits.size() == 2);
    const auto argmax = [](const std::vector<float>& row) {
        return int32_t(std::max_element(row.begin(), row.end()) - row.begin());
    };
    CHECK(seqs.at(2).sample(0, nullptr) == argmax(logits[0]));
    CHECK(seqs.at(0).sample(0, nullptr) == argmax(logits[1]));
    CHECK_THROWS_AS(seqs.at(1).sample(0, nullptr), Error);  // never decoded: no row
    CHECK(seqs.at(2).n_past() == 3);
    CHECK(seqs.at(1).n_past() == 0);

    // A view's own decode equals the batch's row for the same history.
    exec::BatchedSequences again(*file, batch_params(32, 3, 512), greedy);
    std::vector<float> row;
    again.at(2).decode(a, false, &row);
    CHECK(same_bits(row.data(), logits[0].data(), int64_t(row.size())));

    seqs.at(2).truncate(1);
    CHECK(seqs.at(2).n_past() == 1);
    CHECK(seqs.at(0).n_past() == 2);
    seqs.at(0).reset();
    CHECK(seqs.at(0).n_past() == 0);
    CHECK_THROWS_AS(seqs.at(0).sample(0, nullptr), Error);

    // Sequence-level checks: context_overflow names the entry; nothing runs.
    const std::vector<int32_t> too_long(40, 1);
    try {
        seqs.decode_batch(std::vector<exec::BatchEntry>{{1, b}, {0, too_long}}, logits);
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.status() == Status::context_overflow);
        CHECK(std::string(e.what()).find("entry 1") != std::string::npos);
    }
    CHECK(seqs.at(1).n_past() == 0);
}
