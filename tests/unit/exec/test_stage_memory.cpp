// The memory of a stage from the hyperparameters alone (exec/memory/stage_memory.hpp): the KV bytes per
// token of grouped-query and latent caches worked out by hand, the errors, and the figures a
// Context plans with (which must be the same, so that the plan query cannot drift from it).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "exec/context/context.hpp"
#include "exec/memory/stage_memory.hpp"
#include "model/hparams.hpp"
#include "pipeline/planner.hpp"
#include "test_exec_synth.hpp"
#include "util/error.hpp"

using namespace strata;

namespace {

// A llama-family model of 8 layers, 32 query heads and 8 KV heads of head_dim values.
model::Hparams gqa_hparams(int64_t head_dim = 128) {
    model::Hparams hp;
    hp.arch = model::llama_traits();
    hp.n_ctx_train = 8192;
    hp.n_layer = 8;
    hp.n_head = 32;
    hp.n_head_kv = 8;
    hp.head_dim = head_dim;
    hp.n_embd = hp.n_head * head_dim;
    hp.n_ff = 4 * hp.n_embd;
    hp.n_vocab = 32000;
    hp.rope.n_rot = head_dim;
    return hp;
}

// Kimi K2's attention and MoE shapes (lib/model/deepseek2.md): 61 layers, a latent of 512 and a
// rope key of 64 per token and layer.
model::Hparams kimi_k2_hparams(int64_t kv_lora = 512, int64_t n_rot = 64) {
    model::Hparams hp;
    hp.arch = model::deepseek2_traits();
    hp.n_ctx_train = 131072;
    hp.n_layer = 61;
    hp.n_embd = 7168;
    hp.n_ff = 18432;
    hp.n_head = 64;
    hp.n_head_kv = 1;
    hp.n_vocab = 163840;
    hp.rope.n_rot = n_rot;
    hp.mla.q_lora_rank = 1536;
    hp.mla.kv_lora_rank = kv_lora;
    hp.mla.qk_nope = 128;
    hp.mla.v_head_dim = 128;
    hp.head_dim = hp.mla.qk_nope + n_rot;
    hp.moe.n_expert = 384;
    hp.moe.n_expert_used = 8;
    hp.moe.n_expert_shared = 1;
    hp.moe.n_ff_exp = 2048;
    hp.moe.n_dense_lead = 1;
    return hp;
}

exec::StageShape shape(int first, int last, exec::KvType kv = exec::KvType::f16, int64_t n_ctx = 4096) {
    return {.first_layer = first, .last_layer = last, .n_ctx = n_ctx, .n_batch = 512, .n_threads = 4, .kv_type = kv};
}

Status status_of(const model::Hparams& hp, const exec::StageShape& s, std::string* message = nullptr) {
    try {
        (void)exec::stage_plan_inputs(hp, s);
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.status();
    }
    return Status::ok;
}

}  // namespace

TEST_CASE("stage plan: a grouped-query cache holds K and V rows of n_head_kv x head_dim per layer") {
    const model::Hparams hp = gqa_hparams();
    // f16: 2 rows (K, V) x 8 heads x 128 values x 2 bytes = 4096 bytes a layer
    CHECK(exec::stage_plan_inputs(hp, shape(0, 8)).kv_bytes_per_position == 8 * 4096);
    CHECK(exec::stage_plan_inputs(hp, shape(2, 6)).kv_bytes_per_position == 4 * 4096);
    // q8_0: 2 rows x 8 heads x 128 / 32 blocks x 34 bytes = 2176 bytes a layer
    CHECK(exec::stage_plan_inputs(hp, shape(0, 8, exec::KvType::q8_0)).kv_bytes_per_position == 8 * 2176);
    // per position only the attention scores of each thread grow with the context
    CHECK(exec::stage_plan_inputs(hp, shape(0, 8)).scratch_bytes_per_position == 4 * sizeof(float));

    std::string message;
    CHECK(status_of(gqa_hparams(80), shape(0, 8, exec::KvType::q8_0), &message) == Status::unsupported);
    CHECK(message.find("dimension 80") != std::string::npos);
    CHECK(status_of(gqa_hparams(80), shape(0, 8)) == Status::ok);
}

TEST_CASE("stage plan: Kimi K2's latent cache is (kv_lora + rope) values per token and layer") {
    const model::Hparams hp = kimi_k2_hparams();
    const exec::PlanInputs f16 = exec::stage_plan_inputs(hp, shape(0, 61));
    CHECK(f16.kv_bytes_per_position == uint64_t(61 * (512 + 64) * 2));  // 70272
    CHECK(f16.kv_bytes_per_position == 70272);
    // q8_0: (512 + 64) / 32 = 18 blocks of 34 bytes a layer
    CHECK(exec::stage_plan_inputs(hp, shape(0, 61, exec::KvType::q8_0)).kv_bytes_per_position == uint64_t(61 * 18 * 34));
    CHECK(exec::stage_plan_inputs(hp, shape(20, 40)).kv_bytes_per_position == uint64_t(20 * 576 * 2));
    // the attention reads the layer's latent cache as float32: one more row per position
    CHECK(f16.scratch_bytes_per_position == (576 + 4) * sizeof(float));

    exec::PlanInputs in = f16;
    in.weight_bytes = 1;
    in.budget_bytes = uint64_t(1) << 50;
    in.n_ctx = exec::kLongContextTokens;
    const exec::MemoryPlan plan = exec::make_plan(in);
    CHECK(plan.kv_bytes_per_position == 70272);
    CHECK(plan.kv_bytes == uint64_t(70272) << 20);
    const std::string text = plan.describe();
    CAPTURE(text);
    CHECK(text.find("70272 B/token; at 1048576 tokens: 68.62 GiB") != std::string::npos);  // 68.625, printf rounds to even

    std::string message;
    CHECK(status_of(kimi_k2_hparams(500), shape(0, 61, exec::KvType::q8_0), &message) == Status::unsupported);
    CHECK(message.find("latent") != std::string::npos);
    CHECK(status_of(kimi_k2_hparams(512, 48), shape(0, 61, exec::KvType::q8_0)) == Status::unsupported);
}

TEST_CASE("stage plan: bad ranges, contexts and batches are refused; the micro-batch is at most n_ctx") {
    const model::Hparams hp = gqa_hparams();
    CHECK(status_of(hp, shape(0, 9)) == Status::invalid_argument);
    CHECK(status_of(hp, shape(4, 4)) == Status::invalid_argument);
    CHECK(status_of(hp, shape(-1, 2)) == Status::invalid_argument);
    CHECK(status_of(hp, shape(0, 8, exec::KvType::f16, 0)) == Status::invalid_argument);
    exec::StageShape s = shape(0, 8, exec::KvType::f16, 16);
    const exec::PlanInputs capped = exec::stage_plan_inputs(hp, s);
    s.n_batch = 16;
    CHECK(exec::stage_plan_inputs(hp, s).scratch_fixed_bytes == capped.scratch_fixed_bytes);
    s.n_batch = 0;
    CHECK(status_of(hp, s) == Status::invalid_argument);
    CHECK(exec::cpu_backend_threads(3) == 3);
    CHECK(exec::cpu_backend_threads(0) >= 1);
}

TEST_CASE("stage plan: a Context plans exactly the figures of stage_plan_inputs and the planner's weights") {
    for (const bool tied : {false, true}) {
        test::SynthSpec spec;
        spec.n_layer = 4;
        spec.tied = tied;
        spec.wtype = quant::kTypeQ8_0;
        const auto file = test::make_model(spec, 11);
        const model::Hparams hp = model::read_hparams(*file);
        const pipeline::LayerCosts weights = pipeline::weight_costs(*file);
        const std::vector<pipeline::LayerRange> ranges = {{0, 4}, {0, 1}, {1, 3}, {3, 4}};
        for (const auto& r : ranges)
            for (const exec::KvType kv : {exec::KvType::f16, exec::KvType::q8_0}) {
                CAPTURE(tied);
                CAPTURE(r.first);
                CAPTURE(r.second);
                exec::ContextParams p;
                p.n_ctx = 48;
                p.n_batch = 16;
                p.n_threads = 2;
                p.kv_type = kv;
                p.first_layer = r.first;
                p.last_layer = r.second;
                p.memory_budget = uint64_t(1) << 34;
                const exec::Context ctx(*file, p);
                exec::PlanInputs in = exec::stage_plan_inputs(
                    hp, {.first_layer = r.first, .last_layer = r.second, .n_ctx = 48, .n_batch = 16, .n_threads = 2, .kv_type = kv});
                in.weight_bytes = weights.stage_bytes(r, r.first == 0, r.second == 4);
                in.budget_bytes = p.memory_budget;
                const exec::MemoryPlan want = exec::make_plan(in);
                CHECK(ctx.plan().weight_bytes == want.weight_bytes);
                CHECK(ctx.plan().kv_bytes_per_position == want.kv_bytes_per_position);
                CHECK(ctx.plan().kv_bytes == want.kv_bytes);
                CHECK(ctx.plan().scratch_bytes == want.scratch_bytes);
                CHECK(ctx.plan().total_bytes == want.total_bytes);
                CHECK(ctx.plan().kv_bytes_per_position ==
                      exec::kv_bytes_per_position_range(hp, kv, r.first, r.second));
            }
    }
}
