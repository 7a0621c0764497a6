// The kimi-linear / kimi-k3 hyperparameters (lib/model/kimi_linear.md): the per-layer
// head_count_kv array (0: a KDA layer), the KDA widths and gate form, MLA without rotation, the
// MoE routing (as deepseek2), and K3's latent experts, SiTU betas and attention residuals.
#include <cmath>

#include "gguf/model_file.hpp"
#include "model/hparams.hpp"
#include "model/metadata.hpp"
#include "util/error.hpp"

namespace strata::model {

namespace {

std::string num(int64_t v) { return std::to_string(v); }

void read_layer_pattern(const gguf::ModelFile& f, const std::string& p, Hparams& hp) {
    const std::string key = p + "attention.head_count_kv";
    const auto kv = meta_int_array(f, key);
    if (!kv) bad_key(key, "is missing (its per-layer values mark the KDA layers with 0)");
    if (kv->size() != 1 && int64_t(kv->size()) != hp.n_layer)
        bad_key(key, "has " + num(int64_t(kv->size())) + " values for " + num(hp.n_layer) + " layers");
    hp.recurrent.assign(size_t(hp.n_layer), 0);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const int64_t v = (*kv)[kv->size() == 1 ? 0 : size_t(il)];
        if (v < 0 || v > hp.n_head) bad_key(key, "value " + num(v) + " for layer " + num(il) + " is out of range");
        hp.recurrent[size_t(il)] = v == 0 ? 1 : 0;
    }
    hp.n_head_kv = 1;  // the MLA layers' one latent KV head
}

void read_kda(const gguf::ModelFile& f, const std::string& p, Hparams& hp) {
    KdaParams& k = hp.kda;
    k.head_dim = positive_key(f, p + "kda.head_dim", std::nullopt);
    k.conv_kernel = positive_key(f, p + "ssm.conv_kernel", std::nullopt);
    if (k.conv_kernel > 64) bad_key(p + "ssm.conv_kernel", "is implausibly large (" + num(k.conv_kernel) + ")");
    if (const auto lb = meta_float(f, p + "kda.gate_lower_bound")) {
        if (!std::isfinite(*lb) || *lb >= 0.0) bad_key(p + "kda.gate_lower_bound", "must be a finite negative number");
        k.lower_bound_gate = true;
        k.gate_lower_bound = *lb;
    }
    k.full_rank_gate = std::string(hp.arch.name) == "kimi-k3";
}

void read_k3_extras(const gguf::ModelFile& f, const std::string& p, Hparams& hp) {
    MoeParams& e = hp.moe;
    e.latent = meta_int(f, p + "expert_latent_length").value_or(0);
    if (e.latent < 0 || e.latent > hp.n_embd)
        bad_key(p + "expert_latent_length", "must be within [0, embedding_length], is " + num(e.latent));
    const auto beta = meta_float(f, p + "activation.situ_beta");
    const auto linear = meta_float(f, p + "activation.situ_linear_beta");
    if (!beta) bad_key(p + "activation.situ_beta", "is missing (kimi-k3 uses SiTU)");
    if (!linear) bad_key(p + "activation.situ_linear_beta", "is missing (kimi-k3 uses SiTU)");
    if (!std::isfinite(*beta) || *beta <= 0.0) bad_key(p + "activation.situ_beta", "must be a finite positive number");
    if (!std::isfinite(*linear)) bad_key(p + "activation.situ_linear_beta", "must be finite");
    e.situ_beta = *beta;
    e.situ_linear_beta = *linear;
    const auto block = meta_int(f, p + "attn_res.block_size");
    if (!block) bad_key(p + "attn_res.block_size", "is missing (kimi-k3; 0 turns attention residuals off)");
    if (*block < 0 || *block > hp.n_layer) bad_key(p + "attn_res.block_size", "must be within [0, block_count]");
    hp.attn_res_block = *block;
}

}  // namespace

void read_kimi_hparams(const gguf::ModelFile& f, const std::string& p, Hparams& hp) {
    read_layer_pattern(f, p, hp);
    read_mla_widths(f, p, hp);
    read_rope(f, p, hp);  // only rope.dimension_count matters: the Kimi MLA layers do not rotate
    hp.mla.rotate = false;
    hp.rope.unit_magnitude = true;
    hp.mla.kq_scale = 1.0 / std::sqrt(double(hp.head_dim));
    read_kda(f, p, hp);
    read_moe_routing(f, p, hp);
    if (hp.moe.n_expert > 0 && hp.moe.gating != ExpertGating::sigmoid)
        fail(Status::unsupported, "metadata key '" + p + "expert_gating_func': the Kimi architectures route with sigmoid (2)");
    if (std::string(hp.arch.name) == "kimi-linear") hp.moe.weights_norm = true;  // llama.cpp's graph always normalizes
    else read_k3_extras(f, p, hp);
}

}  // namespace strata::model
