// deepseek2 pieces on their own: MoE routing (hand-worked cases), the latent KV cache, and the
// hyperparameter / tensor checks of deepseek2 files (lib/model/deepseek2.md). The forward pass
// itself is compared with the numpy reference in tests/python/test_forward_deepseek2.py.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "exec/context/context.hpp"
#include "exec/attention/latent_cache.hpp"
#include "exec/moe/moe_router.hpp"
#include "exec/memory/stage_memory.hpp"
#include "gguf/model_file.hpp"
#include "gguf/writer.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"
#include "pipeline/planner.hpp"
#include "quant/formats.hpp"
#include "util/error.hpp"
#include "tiny_deepseek2.hpp"

using namespace strata;
using test::TinyDs2;

namespace {

model::MoeParams moe(int64_t n, int64_t k, model::ExpertGating g) {
    model::MoeParams m;
    m.n_expert = n;
    m.n_expert_used = k;
    m.gating = g;
    return m;
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

std::string error_of(const TinyDs2& spec) {
    try {
        auto f = spec.build();
        const model::Hparams hp = model::read_hparams(*f);
        (void)model::bind_weights(*f, hp, 0, int(hp.n_layer));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("MoE routing: sigmoid gating, the bias only chooses, weights normalized then scaled") {
    auto m = moe(4, 2, model::ExpertGating::sigmoid);
    m.weights_norm = true;
    m.weights_scale = 2.5;
    const float logits[4] = {0.5f, -1.0f, 0.2f, 0.1f};
    const float bias[4] = {0.0f, 0.9f, 0.0f, 0.0f};  // lifts expert 1 (sigmoid 0.27 + 0.9) above all
    exec::MoeRouter router(m);
    int32_t chosen[2];
    float w[2];
    const float margin = router.route(logits, bias, chosen, w);
    CHECK(chosen[0] == 1);
    CHECK(chosen[1] == 0);
    const float p1 = sigmoid(-1.0f), p0 = sigmoid(0.5f);  // weights from the unbiased probabilities
    CHECK(w[0] == doctest::Approx(2.5 * p1 / (p0 + p1)).epsilon(1e-6));
    CHECK(w[1] == doctest::Approx(2.5 * p0 / (p0 + p1)).epsilon(1e-6));
    CHECK(margin == doctest::Approx(sigmoid(0.5f) - sigmoid(0.2f)).epsilon(1e-6));
}

TEST_CASE("MoE routing: softmax gating without normalization keeps the probabilities") {
    auto m = moe(3, 1, model::ExpertGating::softmax);
    const float logits[3] = {1.0f, 2.0f, 0.0f};
    exec::MoeRouter router(m);
    int32_t chosen[1];
    float w[1];
    router.route(logits, nullptr, chosen, w);
    const double z = std::exp(1.0) + std::exp(2.0) + std::exp(0.0);
    CHECK(chosen[0] == 1);
    CHECK(w[0] == doctest::Approx(std::exp(2.0) / z).epsilon(1e-6));
}

TEST_CASE("MoE routing: grouped top-k keeps the groups with the best two-expert sums") {
    // 8 experts in 4 groups of 2; 2 groups kept. Group sums: g0 0.9+0.0, g1 0.5+0.5, g2 0.8+0.3,
    // g3 0.2+0.1 -> kept g2 (1.1) and g1 (1.0); expert 0 (0.9, the best single score) is dropped.
    auto m = moe(8, 2, model::ExpertGating::sigmoid);
    m.n_group = 4;
    m.n_group_used = 2;
    const float sel[8] = {0.9f, 0.0f, 0.5f, 0.5f, 0.8f, 0.3f, 0.2f, 0.1f};
    float logits[8];
    for (int i = 0; i < 8; ++i) logits[i] = 0.0f;
    exec::MoeRouter router(m);
    int32_t chosen[2];
    float w[2];
    // zero logits: every probability is 0.5, so the bias alone orders them
    const float margin = router.route(logits, sel, chosen, w);
    CHECK(chosen[0] == 4);
    CHECK(chosen[1] == 2);  // ties 2 and 3 at 0.5: the lower index
    CHECK(margin == doctest::Approx(0.0f).epsilon(1e-6));  // expert 3 ties expert 2
    CHECK(w[0] == doctest::Approx(0.5f));
}

TEST_CASE("latent cache: f16 and q8_0 rows round-trip within their precision; q8_0 needs widths of 32") {
    std::mt19937_64 rng(11);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (exec::KvType type : {exec::KvType::f16, exec::KvType::q8_0}) {
        exec::LatentCache cache(type, 2, 8, 64, 32);
        CHECK(cache.width() == 96);
        std::vector<std::vector<float>> rows(3, std::vector<float>(96));
        for (int p = 0; p < 3; ++p) {
            for (auto& x : rows[size_t(p)]) x = d(rng);
            cache.store(1, p, rows[size_t(p)].data());
        }
        std::vector<float> out(3 * 96);
        cache.load(1, 3, out.data());
        const float tol = type == exec::KvType::f16 ? 2e-3f : 4e-2f;
        for (int p = 0; p < 3; ++p)
            for (int i = 0; i < 96; ++i) CHECK(std::fabs(out[size_t(p * 96 + i)] - rows[size_t(p)][size_t(i)]) < tol);
    }
    CHECK(exec::latent_row_bytes(exec::KvType::f16, 512, 64) == 1152);  // Kimi K2
    CHECK(exec::latent_row_bytes(exec::KvType::q8_0, 512, 64) == 18 * 34);
    try {
        (void)exec::latent_row_bytes(exec::KvType::q8_0, 512, 48);
        FAIL("q8_0 accepted a rope key of 48 values");
    } catch (const Error& e) {
        CHECK(e.status() == Status::unsupported);
        CHECK(std::string(e.what()).find("multiples of 32") != std::string::npos);
    }
}

TEST_CASE("deepseek2 hyperparameters: MLA form, YaRN temperature, MoE keys") {
    TinyDs2 spec;
    spec.scaling = "yarn";
    auto f = spec.build();
    const model::Hparams hp = model::read_hparams(*f);
    CHECK(hp.is_mla());
    CHECK(hp.head_dim == 48);
    CHECK(hp.mla.qk_nope == 16);
    CHECK(hp.mla.v_head_dim == 16);
    CHECK(hp.n_q() == 2 * 48);
    CHECK(hp.n_attn_out() == 2 * 16);
    CHECK(hp.rope.unit_magnitude);
    const double mscale = 1.0 + 0.1 * std::log(4.0);
    CHECK(hp.mla.kq_scale == doctest::Approx(mscale * mscale / std::sqrt(48.0)).epsilon(1e-6));
    CHECK(hp.moe.n_expert == 4);
    CHECK(hp.moe.gating == model::ExpertGating::sigmoid);
    CHECK(!hp.is_moe_layer(0));
    CHECK(hp.is_moe_layer(1));
    const model::ModelWeights w = model::bind_weights(*f, hp, 0, 2);
    CHECK(w.layers[1].moe);
    CHECK(w.layers[1].gate_exps.n_mats == 4);
    CHECK(w.layers[0].wk_b.n_mats == 2);
    CHECK(w.owned_bytes == 0);
    CHECK(exec::kv_bytes_per_position_layer(hp, exec::KvType::f16, 0) == (32 + 32) * 2);
}

TEST_CASE("deepseek2 legacy kv_b files build k_b at load and view v_b in place") {
    TinyDs2 spec;
    spec.legacy = true;
    auto f = spec.build();
    const model::Hparams hp = model::read_hparams(*f);
    CHECK(hp.head_dim == 48);
    const model::ModelWeights w = model::bind_weights(*f, hp, 0, 2);
    CHECK(w.owned_bytes == uint64_t(2 * 2 * 32 * 16 * 4));  // 2 layers x H x C x nope floats
    CHECK(w.layers[0].wv_b.mat_stride == uint64_t(16 + 16) * 32 * 4);
}

TEST_CASE("bad deepseek2 files get an error naming the key or tensor") {
    struct Case {
        const char* what;
        TinyDs2 spec;
        const char* needle;
    };
    std::vector<Case> cases;
    {
        TinyDs2 s;
        s.drop_key = "attention.kv_lora_rank";
        cases.push_back({"no latent width", s, "kv_lora_rank"});
    }
    {
        TinyDs2 s;
        s.u32 = {{"attention.key_length", 40}};
        cases.push_back({"absorbed key width disagrees", s, "key_length"});
    }
    {
        TinyDs2 s;
        s.u32 = {{"expert_gating_func", 3}};
        cases.push_back({"unknown gating", s, "expert_gating_func"});
    }
    {
        TinyDs2 s;
        s.u32 = {{"expert_used_count", 5}};
        cases.push_back({"more experts used than exist", s, "expert_used_count"});
    }
    {
        TinyDs2 s;
        s.u32 = {{"expert_group_count", 3}};
        cases.push_back({"groups do not divide experts", s, "expert_group_count"});
    }
    {
        TinyDs2 s;
        s.scaling = "linear";
        cases.push_back({"linear rope scaling", s, "only none or yarn"});
    }
    {
        TinyDs2 s;
        s.scaling = "yarn";
        s.log_mul = false;
        cases.push_back({"YaRN without its attention temperature", s, "yarn_log_multiplier"});
    }
    {
        TinyDs2 s;
        s.drop_tensor = "blk.1.ffn_up_exps.weight";
        cases.push_back({"missing expert tensor", s, "blk.1.ffn_up_exps.weight"});
    }
    {
        TinyDs2 s;
        s.drop_tensor = "blk.0.attn_v_b.weight";
        cases.push_back({"half of the MLA pair", s, "attn_v_b"});
    }
    for (const Case& c : cases) {
        CAPTURE(c.what);
        const std::string err = error_of(c.spec);
        CHECK(err.find(c.needle) != std::string::npos);
    }
}

TEST_CASE("a deepseek2 context refuses a q8_0 latent cache it cannot store, and plans the latent size") {
    TinyDs2 spec;
    spec.R = 16;  // rope key of 16 values: q8_0 blocks would mix it with the latent
    auto f = spec.build();
    exec::ContextParams p;
    p.n_ctx = 32;
    p.n_threads = 1;
    p.memory_budget = uint64_t(1) << 30;
    p.kv_type = exec::KvType::q8_0;
    try {
        exec::Context ctx(*f, p);
        FAIL("q8_0 accepted");
    } catch (const Error& e) {
        CHECK(e.status() == Status::unsupported);
    }
    p.kv_type = exec::KvType::f16;
    exec::Context ctx(*f, p);
    CHECK(ctx.plan().kv_bytes == uint64_t(2 * 32 * (32 + 16) * 2));  // layers x positions x row
}

TEST_CASE("a deepseek2 context plans the figures of stage_plan_inputs and the planner's weights, k_b built at load included") {
    for (const bool legacy : {false, true}) {
        TinyDs2 spec;
        spec.legacy = legacy;
        auto f = spec.build();
        const model::Hparams hp = model::read_hparams(*f);
        const pipeline::LayerCosts weights = pipeline::weight_costs(*f);
        for (const pipeline::LayerRange& r : {pipeline::LayerRange{0, 2}, {0, 1}, {1, 2}}) {
            CAPTURE(legacy);
            CAPTURE(r.first);
            exec::ContextParams p;
            p.n_ctx = 32;
            p.n_batch = 8;
            p.n_threads = 2;
            p.kv_type = exec::KvType::q8_0;  // C = 32, R = 32: whole blocks
            p.first_layer = r.first;
            p.last_layer = r.second;
            p.memory_budget = uint64_t(1) << 30;
            exec::Context ctx(*f, p);
            exec::PlanInputs in = exec::stage_plan_inputs(
                hp, {.first_layer = r.first, .last_layer = r.second, .n_ctx = 32, .n_batch = 8, .n_threads = 2,
                     .kv_type = exec::KvType::q8_0});
            in.weight_bytes = weights.stage_bytes(r, r.first == 0, r.second == 2);
            in.budget_bytes = p.memory_budget;
            const exec::MemoryPlan want = exec::make_plan(in);
            CHECK(ctx.plan().weight_bytes == want.weight_bytes);
            CHECK(ctx.plan().kv_bytes_per_position == uint64_t(r.second - r.first) * (32 + 32) / 32 * 34);
            CHECK(ctx.plan().kv_bytes == want.kv_bytes);
            CHECK(ctx.plan().scratch_bytes == want.scratch_bytes);
            // legacy: H x C x nope float32 built per layer
            const uint64_t owned = legacy ? uint64_t(r.second - r.first) * 2 * 32 * 16 * 4 : 0;
            CHECK(model::owned_layer_bytes(*f, hp, r.first) * uint64_t(r.second - r.first) == owned);
        }
    }
}
