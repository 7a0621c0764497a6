// A tiny kimi-linear model in memory for the unit tests (KDA layers 0 and 1, an MLA layer 2),
// shared by the KDA and the pipeline tests; KimiDefects breaks it for the bad-file tests.
#pragma once

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/model_file.hpp"
#include "gguf/writer.hpp"
#include "quant/formats.hpp"

namespace strata::test {

// What a bad-file test changes in the tiny model.
struct KimiDefects {
    std::vector<int32_t> head_count_kv = {0, 0, 1};
    std::string drop_key, drop_tensor;
};

// A tiny kimi-linear model in memory: 3 layers (KDA dense, KDA MoE, MLA MoE), f32 weights.
inline std::unique_ptr<gguf::ModelFile> tiny_kimi(uint64_t seed, const KimiDefects& defects = {}) {
    const int64_t E = 64, H = 2, dk = 32, D = H * dk, K = 4, C = 32, N = 16, R = 32, V = 16, FF = 64, FFE = 32,
                  NE = 4, vocab = 16;
    gguf::Writer w;
    const std::string p = "kimi-linear.";
    w.set_string("general.architecture", "kimi-linear");
    w.set_u32(p + "context_length", 256);
    w.set_u32(p + "embedding_length", uint32_t(E));
    w.set_u32(p + "block_count", 3);
    w.set_u32(p + "feed_forward_length", uint32_t(FF));
    w.set_u32(p + "attention.head_count", uint32_t(H));
    w.set_array(p + "attention.head_count_kv", gguf::ValueType::i32, defects.head_count_kv.data(),
                defects.head_count_kv.size());
    w.set_f32(p + "attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32(p + "attention.kv_lora_rank", uint32_t(C));
    w.set_u32(p + "attention.key_length", uint32_t(C + R));
    w.set_u32(p + "attention.key_length_mla", uint32_t(N + R));
    w.set_u32(p + "attention.value_length_mla", uint32_t(V));
    w.set_u32(p + "rope.dimension_count", uint32_t(R));
    w.set_u32(p + "ssm.conv_kernel", uint32_t(K));
    w.set_u32(p + "kda.head_dim", uint32_t(dk));
    w.set_u32(p + "leading_dense_block_count", 1);
    w.set_u32(p + "expert_count", uint32_t(NE));
    w.set_u32(p + "expert_used_count", 2);
    w.set_u32(p + "expert_shared_count", 1);
    w.set_u32(p + "expert_feed_forward_length", uint32_t(FFE));
    w.set_u32(p + "expert_gating_func", 2);
    w.set_f32(p + "expert_weights_scale", 2.0f);
    std::mt19937_64 rng(seed);
    auto tensor = [&](const std::string& name, std::vector<int64_t> ne, float sd, float mean = 0.0f) {
        if (name == defects.drop_tensor) return;
        int64_t n = 1;
        for (auto x : ne) n *= x;
        std::normal_distribution<float> d(mean, sd);
        std::vector<float> v(static_cast<size_t>(n));
        for (auto& x : v) x = d(rng);
        w.add_tensor(name, quant::kTypeF32, uint32_t(ne.size()), ne.data(),
                     std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)));
    };
    auto mat = [&](const std::string& name, int64_t cols, int64_t rows) { tensor(name, {cols, rows}, 1.0f / std::sqrt(float(cols))); };
    tensor("token_embd.weight", {E, vocab}, 1.0f);
    for (int l = 0; l < 3; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        tensor(b + "attn_norm.weight", {E}, 0.05f, 1.0f);
        tensor(b + "ffn_norm.weight", {E}, 0.05f, 1.0f);
        if (l < 2) {
            mat(b + "attn_q.weight", E, D);
            mat(b + "attn_k.weight", E, D);
            mat(b + "attn_v.weight", E, D);
            for (const char* c : {"ssm_conv1d_q.weight", "ssm_conv1d_k.weight", "ssm_conv1d_v.weight"})
                tensor(b + c, {K, 1, D, 1}, 0.5f);
            mat(b + "ssm_f_a.weight", E, dk);
            mat(b + "ssm_f_b.weight", dk, D);
            tensor(b + "ssm_dt.bias", {D}, 0.5f);
            tensor(b + "ssm_a", {1, H, 1, 1}, 0.1f, -0.5f);
            mat(b + "ssm_beta.weight", E, H);
            mat(b + "ssm_g_a.weight", E, dk);
            mat(b + "ssm_g_b.weight", dk, D);
            tensor(b + "ssm_norm.weight", {dk}, 0.05f, 1.0f);
            mat(b + "attn_output.weight", D, E);
        } else {
            mat(b + "attn_q.weight", E, H * (N + R));
            mat(b + "attn_kv_a_mqa.weight", E, C + R);
            tensor(b + "attn_kv_a_norm.weight", {C}, 0.05f, 1.0f);
            tensor(b + "attn_k_b.weight", {N, C, H}, 0.2f);
            tensor(b + "attn_v_b.weight", {C, V, H}, 0.2f);
            mat(b + "attn_output.weight", H * V, E);
        }
        if (l == 0) {
            mat(b + "ffn_gate.weight", E, FF);
            mat(b + "ffn_up.weight", E, FF);
            mat(b + "ffn_down.weight", FF, E);
        } else {
            mat(b + "ffn_gate_inp.weight", E, NE);
            tensor(b + "exp_probs_b.bias", {NE}, 0.05f);
            tensor(b + "ffn_gate_exps.weight", {E, FFE, NE}, 0.125f);
            tensor(b + "ffn_up_exps.weight", {E, FFE, NE}, 0.125f);
            tensor(b + "ffn_down_exps.weight", {FFE, E, NE}, 0.17f);
            mat(b + "ffn_gate_shexp.weight", E, FFE);
            mat(b + "ffn_up_shexp.weight", E, FFE);
            mat(b + "ffn_down_shexp.weight", FFE, E);
        }
    }
    tensor("output_norm.weight", {E}, 0.05f, 1.0f);
    mat("output.weight", E, vocab);
    if (!defects.drop_key.empty()) w.remove(p + defects.drop_key);
    return gguf::ModelFile::parse_memory(w.to_bytes(), "tiny-kimi.gguf");
}

}  // namespace strata::test
