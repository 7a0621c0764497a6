// The deepseek2 architecture (Kimi K2, DeepSeek-V3: MLA attention, MoE with shared experts, YaRN)
// for strata-mkmodel: presets, its command-line flags and their checks, the tensor plan and the
// metadata, as lib/model/deepseek2.md specifies them. Public headers only.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mkmodel_plan.hpp"
#include "strata/strata.hpp"

namespace mkmodel {

struct Deepseek2 {
    int64_t n_embd, n_layer, n_ff, n_vocab, n_head, n_ctx;
    int64_t q_lora, kv_lora, qk_nope, qk_rope, v_head_dim;  // q_lora 0: a full attn_q
    int64_t n_ff_exp, n_expert, n_expert_used, n_expert_shared, n_dense_lead;
    int64_t n_group, n_group_used;  // 0: no expert_group_* keys
    bool sigmoid, score_bias, weights_norm;
    double weights_scale;
    bool yarn;
    double rope_factor;
    int64_t rope_orig_ctx;
    double yarn_log_mul, yarn_beta_fast, yarn_beta_slow;
    double freq_base, rms_eps;
    bool legacy_kv_b = false;  // attn_kv_b (and the legacy keys) instead of attn_k_b / attn_v_b
};

// The RoPE flags as the command line gave them (the llama family reads the same ones).
struct RopeFlags {
    std::string scaling = "none";
    bool scaling_given = false;
    double factor = 0.0;
    bool factor_given = false;
    int64_t orig_ctx = 0;
    bool orig_ctx_given = false;
};

// Flags only deepseek2 takes: with a value (--n-expert N, ...) or without (--legacy-kv-b, ...).
bool deepseek2_value_flag(const std::string& flag);
bool deepseek2_switch(const std::string& flag);

// The model `preset` and the flags describe; throws cli::usage_error for a bad preset, value or
// combination. `flags`: (flag, value) in command-line order, the shared shape flags (--n-embd ...)
// and the deepseek2 ones (switches with an empty value).
Deepseek2 parse_deepseek2(const std::string& preset, const std::vector<std::pair<std::string, std::string>>& flags,
                          const RopeFlags& rope, int weight_type, const std::string& type_name, int64_t min_vocab);

// The tensors in llama.cpp's names and shapes; matrices whose rows do not fit `weight_type`'s
// blocks fall back (row_type), the router and the score bias are f32, the experts per-slice.
std::vector<TensorSpec> plan_deepseek2(const Deepseek2& m, int weight_type);

// The deepseek2.* keys (general.* and the vocabulary are the caller's).
void add_deepseek2_metadata(strata::writer& w, const Deepseek2& m);

}  // namespace mkmodel
