// The kimi-linear (Kimi-Linear) and kimi-k3 (Kimi K3) architectures for strata-mkmodel: KDA
// layers interleaved with NoPE MLA layers, sigmoid-routed MoE with shared experts, and K3's
// latent experts, SiTU, attention residuals, lower-bound decay gate and output gates. Presets,
// command-line flags and their checks, the tensor plan and the metadata, as lib/model/kimi_linear.md
// specifies them (and tests/python/_synth_kimi.py writes them). Public headers only.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mkmodel_plan.hpp"
#include "strata/strata.hpp"

namespace mkmodel {

struct Kimi {
    bool k3 = false;  // kimi-k3 (else kimi-linear)
    int64_t n_embd, n_layer, n_ff, n_vocab, n_head, n_ctx;
    int64_t head_dim, conv_kernel;                          // KDA: dk, K
    int64_t q_lora, kv_lora, qk_nope, qk_rope, v_head_dim;  // MLA; q_lora 0: a full attn_q
    int64_t n_ff_exp, n_expert, n_expert_used, n_expert_shared, n_dense_lead;
    std::vector<int64_t> mla_layers;  // 0-based, ascending; the other layers are KDA
    double weights_scale;
    bool weights_norm;  // written for kimi-k3 only (kimi-linear always renormalizes)
    // kimi-k3 only
    int64_t latent;          // expert_latent_length; 0: experts at full width
    int64_t attn_res_block;  // attn_res.block_size; 0: plain residuals
    double situ_beta, situ_linear_beta, gate_lower_bound;
    double rms_eps, freq_base;

    const char* arch() const { return k3 ? "kimi-k3" : "kimi-linear"; }
    bool is_mla(int64_t layer) const;
};

// Flags only the Kimi architectures take (all with a value), and of those the ones only kimi-k3
// takes.
bool kimi_value_flag(const std::string& flag);
bool kimi_k3_flag(const std::string& flag);
// Of deepseek2's flags, those that both Kimi architectures also take (kimi-k3 also takes
// --no-weights-norm).
bool kimi_shares_flag(const std::string& flag);

// The model `preset` and the flags describe for `arch` (kimi-linear or kimi-k3); throws
// cli::usage_error for a bad preset, value or combination. `flags`: (flag, value) in order, the
// shared shape flags (--n-embd ...), deepseek2's (switches with an empty value) and the Kimi ones.
Kimi parse_kimi(const std::string& arch, const std::string& preset,
                const std::vector<std::pair<std::string, std::string>>& flags, int weight_type,
                const std::string& type_name, int64_t min_vocab);

// The tensors in llama.cpp's names and shapes; matrices whose rows do not fit `weight_type`'s
// blocks fall back (row_type); routers, biases, norms, conv kernels, ssm_a, ssm_dt and the
// attention-residual score vectors are f32; the experts are per-slice.
std::vector<TensorSpec> plan_kimi(const Kimi& m, int weight_type);

// The kimi-linear.* / kimi-k3.* keys (general.* and the vocabulary are the caller's).
void add_kimi_metadata(strata::writer& w, const Kimi& m);

}  // namespace mkmodel
