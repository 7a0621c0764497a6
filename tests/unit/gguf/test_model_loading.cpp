// lib/model: hyperparameters and weight binding, and the errors bad models get.
#include <doctest/doctest.h>

#include <string>

#include "model/hparams.hpp"
#include "model/weights.hpp"
#include "test_exec_synth.hpp"
#include "util/error.hpp"

using namespace strata;

namespace {

// Loads hparams and binds every layer; returns the error message ("" when it loads).
std::string load_error(const test::SynthSpec& s, Status* status = nullptr) {
    try {
        auto f = test::make_model(s, 7);
        const auto hp = model::read_hparams(*f);
        model::bind_weights(*f, hp, 0, int(hp.n_layer));
    } catch (const Error& e) {
        if (status) *status = e.status();
        return e.what();
    }
    return "";
}

bool has(const std::string& m, const std::string& part) { return m.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("hyperparameters and defaults are read for llama, qwen2 and qwen3") {
    for (const char* arch : {"llama", "qwen2", "qwen3"}) {
        CAPTURE(arch);
        test::SynthSpec s;
        s.arch = arch;
        auto f = test::make_model(s, 1);
        const auto hp = model::read_hparams(*f);
        CHECK(std::string(hp.arch.name) == arch);
        CHECK(hp.n_embd == 256);
        CHECK(hp.n_head == 4);
        CHECK(hp.n_head_kv == 2);
        CHECK(hp.head_dim == 64);       // default n_embd / n_head
        CHECK(hp.rope.n_rot == 64);     // default head_dim
        CHECK(hp.n_vocab == 64);        // from token_embd.weight
        // No scaling keys: llama.cpp's default type (linear) with factor 1, i.e. unscaled positions.
        CHECK(hp.rope.scaling == model::RopeScaling::linear);
        CHECK(hp.rope.factor == 1.0);
        CHECK(hp.arch.rope_order == (std::string(arch) == "llama" ? model::RopeOrder::normal : model::RopeOrder::neox));
        CHECK(hp.arch.qkv_bias == (std::string(arch) == "qwen2"));
        CHECK(hp.arch.qk_norm == (std::string(arch) == "qwen3"));
    }
    test::SynthSpec y;
    y.scaling = "yarn";
    y.factor = 8;
    auto f = test::make_model(y, 1);
    const auto hp = model::read_hparams(*f);
    CHECK(hp.rope.scaling == model::RopeScaling::yarn);
    CHECK(hp.rope.factor == 8.0);
    CHECK(hp.rope.ext_factor == 1.0);
    CHECK(hp.rope.beta_fast == 32.0);
    CHECK(hp.rope.beta_slow == 1.0);
    CHECK(hp.rope.n_ctx_orig == hp.n_ctx_train);
}

TEST_CASE("a rope scaling factor applies whatever the scaling type says, as in llama.cpp") {
    test::SynthSpec s;
    s.scaling = "none";
    s.factor = 4.0;
    const auto hp = model::read_hparams(*test::make_model(s, 3));
    CHECK(hp.rope.scaling == model::RopeScaling::none);
    CHECK(hp.rope.factor == 4.0);
}

TEST_CASE("a layer range binds only its own tensors; output ties to token_embd when absent") {
    test::SynthSpec s;
    s.n_layer = 3;
    s.tied = true;
    s.omit = {"blk.0.attn_q.weight"};  // outside the range below: must not be needed
    auto f = test::make_model(s, 1);
    const auto hp = model::read_hparams(*f);
    const auto w = model::bind_weights(*f, hp, 1, 3);
    CHECK(w.layers.size() == 2);
    CHECK_FALSE(w.token_embd.present());
    CHECK(w.last_stage);
    CHECK(w.tied_output);
    CHECK(w.output.name == "token_embd.weight");
    const auto mid = model::bind_weights(*f, hp, 1, 2);
    CHECK_FALSE(mid.output.present());
    CHECK(mid.mapped_bytes < w.mapped_bytes);
    CHECK_THROWS_AS(model::bind_weights(*f, hp, 0, 1), Error);  // blk.0.attn_q is missing
    CHECK_THROWS_AS(model::bind_weights(*f, hp, 2, 2), Error);  // empty range
    CHECK_THROWS_AS(model::bind_weights(*f, hp, 0, 4), Error);  // past n_layer
}

TEST_CASE("bad models get a clear error naming the key or tensor") {
    Status st = Status::ok;
    SUBCASE("missing tensor") {
        test::SynthSpec s;
        s.omit = {"blk.1.ffn_up.weight"};
        const auto m = load_error(s, &st);
        CHECK(st == Status::format);
        CHECK(has(m, "blk.1.ffn_up.weight"));
        CHECK(has(m, "missing"));
    }
    SUBCASE("qwen2 without its biases") {
        test::SynthSpec s;
        s.arch = "qwen2";
        s.omit = {"blk.0.attn_k.bias"};
        CHECK(has(load_error(s, &st), "blk.0.attn_k.bias"));
    }
    SUBCASE("wrong shape") {
        test::SynthSpec s;
        s.reshape["blk.0.attn_k.weight"] = {256, 256};
        const auto m = load_error(s, &st);
        CHECK(st == Status::format);
        CHECK(has(m, "blk.0.attn_k.weight"));
        CHECK(has(m, "[256, 256]"));
        CHECK(has(m, "[256, 128]"));
    }
    SUBCASE("wrong norm length") {
        test::SynthSpec s;
        s.reshape["output_norm.weight"] = {128, 1};
        CHECK(has(load_error(s, &st), "output_norm.weight"));
    }
    SUBCASE("head count not dividing") {
        test::SynthSpec s;
        s.int_keys["attention.head_count_kv"] = 3;
        const auto m = load_error(s, &st);
        CHECK(st == Status::format);
        CHECK(has(m, "llama.attention.head_count_kv"));
        CHECK(has(m, "does not divide"));
    }
    SUBCASE("rope dims larger than the head dim") {
        test::SynthSpec s;
        s.n_rot = 128;
        const auto m = load_error(s, &st);
        CHECK(st == Status::format);
        CHECK(has(m, "rope.dimension_count"));
        CHECK(has(m, "head dimension 64"));
    }
    SUBCASE("zero sizes") {
        test::SynthSpec s;
        s.int_keys["feed_forward_length"] = 0;
        const auto m = load_error(s, &st);
        CHECK(has(m, "llama.feed_forward_length"));
        CHECK(has(m, "positive"));
    }
    SUBCASE("missing key") {
        test::SynthSpec s;
        s.int_keys["block_count"] = -1;
        CHECK(has(load_error(s, &st), "llama.block_count"));
    }
    SUBCASE("unknown architecture") {
        test::SynthSpec s;
        s.arch = "gpt2";
        const auto m = load_error(s, &st);
        CHECK(st == Status::unsupported);
        CHECK(has(m, "gpt2"));
    }
    SUBCASE("unknown rope scaling") {
        test::SynthSpec s;
        s.scaling = "longrope";
        const auto m = load_error(s, &st);
        CHECK(st == Status::unsupported);
        CHECK(has(m, "longrope"));
    }
}
