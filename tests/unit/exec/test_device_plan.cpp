// The GPU stage's memory plan (exec/memory/device_plan.hpp) worked by hand: tensor padding and alignment,
// activations per token, KV and RoPE tables per position, workspaces, the largest context that
// fits a budget, and the plan text naming device memory.
#include <doctest/doctest.h>

#include <string>

#include "exec/device_activations.hpp"
#include "exec/memory/device_plan.hpp"
#include "model/weights.hpp"
#include "test_kimi_synth.hpp"
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
    // x, xn, proj: 3 * 512; q, attn: 2 * 512; k, v: 2 * 128; gate, up: 2 * 1024; nothing else
    const exec::DeviceActivationWidths w = exec::device_activation_widths(hp, 0, 4);
    CHECK(w.x == 512);
    CHECK(w.att == 512);
    CHECK(w.k == 128);
    CHECK(w.gate == 1024);
    CHECK(w.ckv == 0);
    CHECK(w.kq == 0);
    CHECK(w.router == 0);
    CHECK(w.chosen_ints == 0);
    CHECK(exec::device_activation_bytes(w, 1, 256) == (3 * 2048 + 2 * 2048 + 2 * 512 + 2 * 4096));
    // each buffer on its own 256-byte boundary: 3 tokens of 128 floats = 1536 bytes, of 512 floats = 6144
    CHECK(exec::device_activation_bytes(w, 3, 256) == 5 * 6144 + 2 * 1536 + 2 * 12288);
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

TEST_CASE("device_plan: the GPU runs the llama family with head dims 64 and 128, and refuses the rest naming why") {
    model::Hparams hp = small_llama();
    CHECK_NOTHROW(exec::check_gpu_supports(hp));
    hp.arch = model::qwen3_traits();
    hp.head_dim = 128;
    CHECK_NOTHROW(exec::check_gpu_supports(hp));
    hp.head_dim = 96;
    CHECK_THROWS_WITH_AS(exec::check_gpu_supports(hp), doctest::Contains("96"), Error);
    try {
        exec::check_gpu_supports(hp);
        FAIL("accepted head_dim 96");
    } catch (const Error& e) {
        CHECK(e.status() == Status::unsupported);
        CHECK(std::string(e.what()).find("CPU backend") != std::string::npos);
    }
}

TEST_CASE("device_plan: kimi-linear on the GPU: KDA, latent and MoE buffers, f16 latent rows, KDA state, no RoPE tables") {
    const auto file = test::tiny_kimi(7);
    model::Hparams hp = model::read_hparams(*file);
    REQUIRE(hp.is_recurrent_layer(0));
    REQUIRE(!hp.is_recurrent_layer(2));
    CHECK_NOTHROW(exec::check_gpu_supports(hp));
    // E 64, 2 heads; KDA dk 32 (D 64), conv 4; MLA C 32, qk_nope 16, R 32, v 16; 4 experts of
    // 32, 2 used, 1 shared; n_ff 64 (layer 0 dense).
    const exec::DeviceActivationWidths all = exec::device_activation_widths(hp, 0, 3);
    CHECK(all.kq == 64);
    CHECK(all.klow == 32);
    CHECK(all.kbeta == 2);
    CHECK(all.ckv == 32 + 32);
    CHECK(all.q_abs == 2 * 32);
    CHECK(all.head_in == 2 * 16);
    CHECK(all.q == 2 * (16 + 32));
    CHECK(all.att == 64);        // max(n_head * v 32, D 64)
    CHECK(all.gate == 64);       // the dense layer's n_ff
    CHECK(all.router == 4);
    CHECK(all.xe == 2 * 64);     // n_used rows of n_embd
    CHECK(all.ge == 2 * 32);
    CHECK(all.chosen_ints == 3 * 2);
    CHECK(all.k == 0);           // no grouped-query layer
    // A stage of the two KDA layers only: no latent buffers; layer 1 is MoE, so no dense n_ff
    // but the shared expert's width.
    const exec::DeviceActivationWidths kda = exec::device_activation_widths(hp, 1, 2);
    CHECK(kda.ckv == 0);
    CHECK(kda.q_abs == 0);
    CHECK(kda.kq == 64);
    CHECK(kda.gate == 32);
    // The plan: latent rows of (32 + 32) halves for the MLA layer, the KDA state of two layers
    // (3 windows of 64 x 3 floats, 2 heads of 32 x 32), no RoPE tables (the rope part is used
    // unrotated).
    exec::DeviceStageShape s{.first_layer = 0, .last_layer = 3, .n_ctx = 256, .n_batch = 16};
    exec::PlanInputs in = exec::device_plan_inputs(hp, s);
    CHECK(in.kv_bytes_per_position == 64 * 2);
    CHECK(in.state_bytes == 2 * (3 * 64 * 3 + 2 * 32 * 32) * 4);
    CHECK(in.scratch_bytes_per_position == 0);
    CHECK_FALSE(exec::device_rope_tables(hp, 0, 3));
    // deepseek2's latent attention rotates: tables of n_rot / 2 pairs
    hp.mla.rotate = true;
    CHECK(exec::device_rope_tables(hp, 0, 3));
    CHECK_FALSE(exec::device_rope_tables(hp, 0, 2));  // KDA layers never rotate
    CHECK(exec::device_plan_inputs(hp, s).scratch_bytes_per_position == 2 * 16 * 4);
    // The GPU's latent cache is f16: a q8_0 cache is refused naming it, for a range with an MLA layer.
    s.kv_type = exec::KvType::q8_0;
    CHECK_THROWS_WITH_AS(exec::device_plan_inputs(hp, s), doctest::Contains("f16"), Error);
    s.last_layer = 2;
    CHECK_NOTHROW(exec::device_plan_inputs(hp, s));
}

TEST_CASE("device_plan: limits of the GPU kernels are refused naming them; MoE routing on the host names the experts") {
    const auto file = test::tiny_kimi(8);
    const model::Hparams base = model::read_hparams(*file);
    model::Hparams hp = base;
    hp.kda.head_dim = 48;
    CHECK_THROWS_WITH_AS(exec::check_gpu_supports(hp), doctest::Contains("48"), Error);
    hp = base;
    hp.kda.head_dim = 256;
    CHECK_THROWS_AS(exec::check_gpu_supports(hp), Error);
    hp = base;
    hp.mla.kv_lora_rank = 2048;
    CHECK_THROWS_WITH_AS(exec::check_gpu_supports(hp), doctest::Contains("2048"), Error);
    hp = base;
    hp.rope.n_rot = 256;
    CHECK_THROWS_WITH_AS(exec::check_gpu_supports(hp), doctest::Contains("256"), Error);
    // Attention residuals: the mix scores the banked checkpoints and x, at most 64 entries.
    hp = small_llama();  // (no per-layer kinds to resize with n_layer)
    hp.n_layer = 126;
    hp.attn_res_block = 2;  // 63 checkpoints: the most the mix takes
    CHECK_NOTHROW(exec::check_gpu_supports(hp));
    hp.n_layer = 127;  // 64
    CHECK_THROWS_WITH_AS(exec::check_gpu_supports(hp), doctest::Contains("banks 64"), Error);
    // The tiny model's experts are f32: MoE layers route on the host, naming the tensor.
    const model::ModelWeights w = model::bind_weights(*file, base, 0, 3);
    const std::string why = exec::gpu_host_routing_reason(w);
    CHECK(why.find("ffn_gate_exps") != std::string::npos);
    CHECK(why.find("host") != std::string::npos);
    // A stage without MoE layers needs no routing at all.
    const model::ModelWeights dense = model::bind_weights(*file, base, 0, 1);
    CHECK(exec::gpu_host_routing_reason(dense).empty());
}
