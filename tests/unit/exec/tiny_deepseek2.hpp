// A tiny deepseek2 file in memory for the unit tests (test_deepseek2.cpp, test_exec_batch.cpp):
// 2 layers (1 dense, 1 MoE with a shared expert), latent attention with a q lora, f32 weights
// drawn from `seed`, every key and tensor settable or droppable.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gguf/model_file.hpp"
#include "gguf/writer.hpp"
#include "quant/formats.hpp"

namespace strata::test {

// A tiny deepseek2 file in memory: 2 layers (1 dense, 1 MoE), f32 weights, every key settable.
struct TinyDs2 {
    int64_t E = 64, H = 2, QL = 32, C = 32, nope = 16, R = 32, V = 16, FF = 64, FFE = 32, NE = 4, K = 2, vocab = 8;
    bool legacy = false;
    std::string drop_key, drop_tensor;
    std::vector<std::pair<std::string, uint32_t>> u32;
    std::string scaling;
    bool log_mul = true;
    uint64_t seed = 7;  // of the weights

    std::unique_ptr<gguf::ModelFile> build() const {
        gguf::Writer w;
        const std::string p = "deepseek2.";
        auto put = [&](const std::string& k, uint32_t v) {
            if (k != drop_key) w.set_u32(p + k, v);
        };
        w.set_string("general.architecture", "deepseek2");
        put("context_length", 256);
        put("embedding_length", uint32_t(E));
        put("block_count", 2);
        put("feed_forward_length", uint32_t(FF));
        put("attention.head_count", uint32_t(H));
        put("attention.head_count_kv", legacy ? uint32_t(H) : 1);
        put("attention.q_lora_rank", uint32_t(QL));
        put("attention.kv_lora_rank", uint32_t(C));
        put("rope.dimension_count", uint32_t(R));
        if (legacy) {
            put("attention.key_length", uint32_t(nope + R));
            put("attention.value_length", uint32_t(V));
        } else {
            put("attention.key_length", uint32_t(C + R));
            put("attention.value_length", uint32_t(C));
            put("attention.key_length_mla", uint32_t(nope + R));
            put("attention.value_length_mla", uint32_t(V));
        }
        put("leading_dense_block_count", 1);
        put("expert_count", uint32_t(NE));
        put("expert_used_count", uint32_t(K));
        put("expert_shared_count", 1);
        put("expert_feed_forward_length", uint32_t(FFE));
        put("expert_gating_func", 2);
        for (const auto& [k, v] : u32) w.set_u32(p + k, v);
        if (!scaling.empty()) {
            w.set_string(p + "rope.scaling.type", scaling);
            w.set_f32(p + "rope.scaling.factor", 4.0f);
            w.set_u32(p + "rope.scaling.original_context_length", 64);
            if (log_mul) w.set_f32(p + "rope.scaling.yarn_log_multiplier", 0.1f);
        }
        std::mt19937_64 rng(seed);
        std::normal_distribution<float> d(0.0f, 0.2f);
        auto tensor = [&](const std::string& name, std::vector<int64_t> ne) {
            if (name == drop_tensor) return;
            int64_t n = 1;
            for (auto x : ne) n *= x;
            std::vector<float> v(static_cast<size_t>(n));
            for (auto& x : v) x = d(rng);
            w.add_tensor(name, quant::kTypeF32, uint32_t(ne.size()), ne.data(),
                         std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)));
        };
        tensor("token_embd.weight", {E, vocab});
        for (int l = 0; l < 2; ++l) {
            const std::string b = "blk." + std::to_string(l) + ".";
            tensor(b + "attn_norm.weight", {E});
            tensor(b + "attn_q_a.weight", {E, QL});
            tensor(b + "attn_q_a_norm.weight", {QL});
            tensor(b + "attn_q_b.weight", {QL, H * (nope + R)});
            tensor(b + "attn_kv_a_mqa.weight", {E, C + R});
            tensor(b + "attn_kv_a_norm.weight", {C});
            if (legacy) {
                tensor(b + "attn_kv_b.weight", {C, H * (nope + V)});
            } else {
                tensor(b + "attn_k_b.weight", {nope, C, H});
                tensor(b + "attn_v_b.weight", {C, V, H});
            }
            tensor(b + "attn_output.weight", {H * V, E});
            tensor(b + "ffn_norm.weight", {E});
            if (l == 0) {
                tensor(b + "ffn_gate.weight", {E, FF});
                tensor(b + "ffn_up.weight", {E, FF});
                tensor(b + "ffn_down.weight", {FF, E});
            } else {
                tensor(b + "ffn_gate_inp.weight", {E, NE});
                tensor(b + "exp_probs_b.bias", {NE});
                tensor(b + "ffn_gate_exps.weight", {E, FFE, NE});
                tensor(b + "ffn_up_exps.weight", {E, FFE, NE});
                tensor(b + "ffn_down_exps.weight", {FFE, E, NE});
                tensor(b + "ffn_gate_shexp.weight", {E, FFE});
                tensor(b + "ffn_up_shexp.weight", {E, FFE});
                tensor(b + "ffn_down_shexp.weight", {FFE, E});
            }
        }
        tensor("output_norm.weight", {E});
        tensor("output.weight", {E, vocab});
        return gguf::ModelFile::parse_memory(w.to_bytes(), "tiny-deepseek2.gguf");
    }
};

}  // namespace strata::test
