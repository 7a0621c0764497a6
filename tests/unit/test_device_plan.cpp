// The GPU stage's memory plan (exec/device_plan.hpp) worked by hand: tensor padding and alignment,
// activations per token, KV and RoPE tables per position, workspaces, the largest context that
// fits a budget, and the plan text naming device memory.
#include <doctest/doctest.h>

#include <string>

#include "exec/device_plan.hpp"
#include "model/hparams.hpp"
#include "util/error.hpp"

using namespace strata;

namespace {

// llama-family: 4 layers, 8 query heads and 2 KV heads of 64, n_embd 512, n_ff 1024, 1000 tokens.
model::Hparams small_llama() {
    model::Hparams hp;
    hp.arch = model::llama_traits();
    hp.n_ctx_train = 4096;
    hp.n_layer = 4;
    hp.n_head = 8;
    hp.n_head_kv = 2;
    hp.head_dim = 64;
    hp.n_embd = 512;
    hp.n_ff = 1024;
    hp.n_vocab = 1000;
    hp.rope.n_rot = 64;
    return hp;
}

}  // namespace

TEST_CASE("device_plan: each uploaded tensor is padded, then rounded up to 256 bytes") {
    CHECK(exec::device_tensor_bytes(0, 16) == 256);
    CHECK(exec::device_tensor_bytes(240, 16) == 256);
    CHECK(exec::device_tensor_bytes(241, 16) == 512);
    CHECK(exec::device_tensor_bytes(50 * 1024, 16) == 50 * 1024 + 256);  // 51200 + 16 -> 51456
    CHECK(exec::device_tensor_bytes(1000, 0) == 1024);
}

TEST_CASE("device_plan: activations, KV, RoPE tables and workspaces by hand") {
    const model::Hparams hp = small_llama();
    // x, xn, proj: 3 * 512; q, attn: 2 * 512; k, v: 2 * 128; gate, up: 2 * 1024
    CHECK(exec::device_activation_floats_per_token(hp) == 1536 + 1024 + 256 + 2048);
    CHECK(exec::device_logit_rows(8) == 8);
    CHECK(exec::device_logit_rows(512) == exec::kDeviceLogitRows);

    exec::DeviceStageShape s{.first_layer = 1, .last_layer = 4, .n_ctx = 2048, .n_batch = 32,
                             .kv_type = exec::KvType::f16, .weight_bytes = 1000000,
                             .matmul_workspace_bytes = 70000, .attention_workspace_bytes = 9000};
    const exec::PlanInputs in = exec::device_plan_inputs(hp, s);
    CHECK(in.weight_bytes == 1000000);
    // 3 layers x (K + V) x 128 values x 2 bytes
    CHECK(in.kv_bytes_per_position == 3 * 2 * 128 * 2);
    CHECK(in.scratch_bytes_per_position == 2 * 32 * 4);
    // the last stage: 32 rows of 1000 logits
    CHECK(in.scratch_fixed_bytes == ((1536 + 1024 + 256 + 2048) * 32 + 32 * 1000) * 4 + 32 * 4 + 4 + 70000 + 9000);
    CHECK(in.n_ctx == 2048);
    // a stage that does not end the model computes no logits; 100 tokens still take 32 rows
    exec::DeviceStageShape mid = s;
    mid.last_layer = 3;
    CHECK(exec::device_plan_inputs(hp, mid).scratch_fixed_bytes == (1536 + 1024 + 256 + 2048) * 32 * 4 + 32 * 4 + 4 + 70000 + 9000);
    exec::DeviceStageShape wide = s;
    wide.n_batch = 100;
    CHECK(exec::device_plan_inputs(hp, wide).scratch_fixed_bytes ==
          ((1536 + 1024 + 256 + 2048) * 100 + 32 * 1000) * 4 + 100 * 4 + 4 + 70000 + 9000);

    // q8_0: 128 values = 4 blocks of 34 bytes per row
    s.kv_type = exec::KvType::q8_0;
    CHECK(exec::device_plan_inputs(hp, s).kv_bytes_per_position == 3 * 2 * 4 * 34);

    // The largest context that fits: (budget - fixed) / per position.
    exec::PlanInputs b = exec::device_plan_inputs(hp, s);
    const uint64_t per_pos = 3 * 2 * 4 * 34 + 2 * 32 * 4;
    const uint64_t fixed = b.weight_bytes + b.scratch_fixed_bytes;
    b.budget_bytes = fixed + 1000 * per_pos + 7;
    exec::MemoryPlan p = exec::make_plan(b);
    CHECK_FALSE(p.fits());
    CHECK(p.max_ctx_that_fits == 1000);
    p.on_device = true;
    const std::string text = p.describe();
    CHECK(text.find("device memory plan") != std::string::npos);
    CHECK(text.find("(uploaded)") != std::string::npos);
    CHECK(text.find("of device memory") != std::string::npos);
}

TEST_CASE("device_plan: bad ranges and batches are refused") {
    const model::Hparams hp = small_llama();
    exec::DeviceStageShape s{.first_layer = 0, .last_layer = 5, .n_ctx = 64, .n_batch = 8};
    CHECK_THROWS_AS(exec::device_plan_inputs(hp, s), Error);
    s.last_layer = 4;
    s.n_batch = 65;
    CHECK_THROWS_AS(exec::device_plan_inputs(hp, s), Error);
    s.n_batch = 8;
    s.n_ctx = 0;
    CHECK_THROWS_AS(exec::device_plan_inputs(hp, s), Error);
}

TEST_CASE("device_plan: the GPU runs the llama family with head dims 64 and 128, and refuses the rest by name") {
    model::Hparams hp = small_llama();
    CHECK_NOTHROW(exec::check_gpu_supports(hp));
    hp.arch = model::qwen3_traits();
    hp.head_dim = 128;
    CHECK_NOTHROW(exec::check_gpu_supports(hp));
    hp.head_dim = 96;
    CHECK_THROWS_WITH_AS(exec::check_gpu_supports(hp), doctest::Contains("96"), Error);
    for (const model::ArchTraits& a : {model::deepseek2_traits(), model::kimi_linear_traits(), model::kimi_k3_traits()}) {
        model::Hparams other = small_llama();
        other.arch = a;
        try {
            exec::check_gpu_supports(other);
            FAIL("accepted " << a.name);
        } catch (const Error& e) {
            CHECK(e.status() == Status::unsupported);
            const std::string msg = e.what();
            CHECK(msg.find(a.name) != std::string::npos);
            CHECK(msg.find("CPU backend") != std::string::npos);
        }
    }
    model::Hparams moe = small_llama();
    moe.moe.n_expert = 8;
    CHECK_THROWS_AS(exec::check_gpu_supports(moe), Error);
}
