// The deepseek2 hyperparameters (lib/model/deepseek2.md): MLA widths in either the MLA form
// (key_length_mla / value_length_mla, as llama.cpp converts today) or the legacy form, the MoE
// routing keys, and the YaRN attention temperature.
#include <cmath>

#include "gguf/model_file.hpp"
#include "model/hparams.hpp"
#include "model/metadata.hpp"
#include "util/error.hpp"

namespace strata::model {

namespace {

std::string num(int64_t v) { return std::to_string(v); }

}  // namespace

void read_mla_widths(const gguf::ModelFile& f, const std::string& p, Hparams& hp) {
    MlaParams& m = hp.mla;
    m.q_lora_rank = meta_int(f, p + "attention.q_lora_rank").value_or(0);
    if (m.q_lora_rank < 0) bad_key(p + "attention.q_lora_rank", "must be >= 0, is " + num(m.q_lora_rank));
    m.kv_lora_rank = positive_key(f, p + "attention.kv_lora_rank", std::nullopt);
    const int64_t n_rot = positive_key(f, p + "rope.dimension_count", std::nullopt);

    const auto key = meta_int(f, p + "attention.key_length");
    const auto value = meta_int(f, p + "attention.value_length");
    const auto key_mla = meta_int(f, p + "attention.key_length_mla");
    const auto value_mla = meta_int(f, p + "attention.value_length_mla");
    int64_t qk_head = 0;
    if (key_mla || value_mla) {
        // MLA form: the plain keys describe the absorbed head (latent + rope key, latent).
        if (!key_mla || !value_mla)
            bad_key(p + (key_mla ? "attention.value_length_mla" : "attention.key_length_mla"),
                    "is missing (the MLA form needs both key_length_mla and value_length_mla)");
        qk_head = *key_mla;
        m.v_head_dim = *value_mla;
        if (key && *key != m.kv_lora_rank + n_rot)
            bad_key(p + "attention.key_length", "is " + num(*key) + " but the MLA form needs kv_lora_rank + rope.dimension_count = " +
                                                    num(m.kv_lora_rank + n_rot));
        if (value && *value != m.kv_lora_rank)
            bad_key(p + "attention.value_length", "is " + num(*value) + " but the MLA form needs kv_lora_rank = " + num(m.kv_lora_rank));
        if (hp.arch.attention == AttentionKind::mla && hp.n_head_kv != 1 && meta_int(f, p + "attention.head_count_kv"))
            bad_key(p + "attention.head_count_kv", "is " + num(hp.n_head_kv) + " but the MLA form has one latent KV head");
    } else {
        // Legacy form: per-head widths under the plain keys.
        if (!key) bad_key(p + "attention.key_length", "is missing (neither the MLA nor the legacy form is complete)");
        if (!value) bad_key(p + "attention.value_length", "is missing (neither the MLA nor the legacy form is complete)");
        qk_head = *key;
        m.v_head_dim = *value;
    }
    if (m.v_head_dim <= 0) bad_key(p + "attention.value_length(_mla)", "must be positive, is " + num(m.v_head_dim));
    if (qk_head <= n_rot)
        bad_key(p + "attention.key_length(_mla)", "(" + num(qk_head) + ") must exceed rope.dimension_count (" + num(n_rot) +
                                                   "): a query head is its non-rotated part followed by the rotated part");
    m.qk_nope = qk_head - n_rot;
    hp.head_dim = qk_head;
}

void read_moe_routing(const gguf::ModelFile& f, const std::string& p, Hparams& hp) {
    MoeParams& e = hp.moe;
    e.n_dense_lead = meta_int(f, p + "leading_dense_block_count").value_or(0);
    if (e.n_dense_lead < 0 || e.n_dense_lead > hp.n_layer)
        bad_key(p + "leading_dense_block_count", "must be within [0, block_count = " + num(hp.n_layer) + "], is " + num(e.n_dense_lead));
    e.n_expert = meta_int(f, p + "expert_count").value_or(0);
    if (e.n_dense_lead == hp.n_layer) {
        e.n_expert = 0;  // every layer is dense: the expert keys do not matter
        return;
    }
    if (e.n_expert <= 0)
        bad_key(p + "expert_count", "must be positive: layers " + num(e.n_dense_lead) + ".." + num(hp.n_layer - 1) +
                                        " are MoE layers (leading_dense_block_count = " + num(e.n_dense_lead) + ")");
    if (e.n_expert > 65536) bad_key(p + "expert_count", "is implausibly large (" + num(e.n_expert) + ")");
    e.n_expert_used = positive_key(f, p + "expert_used_count", std::nullopt);
    if (e.n_expert_used > e.n_expert)
        bad_key(p + "expert_used_count", "(" + num(e.n_expert_used) + ") exceeds expert_count (" + num(e.n_expert) + ")");
    e.n_expert_shared = meta_int(f, p + "expert_shared_count").value_or(0);
    if (e.n_expert_shared < 0 || e.n_expert_shared > 64)
        bad_key(p + "expert_shared_count", "must be within [0, 64], is " + num(e.n_expert_shared));
    e.n_ff_exp = positive_key(f, p + "expert_feed_forward_length", std::nullopt);

    const int64_t gating = meta_int(f, p + "expert_gating_func").value_or(0);
    if (gating == 0 || gating == 1) e.gating = ExpertGating::softmax;  // 0: llama.cpp's default for old files
    else if (gating == 2) e.gating = ExpertGating::sigmoid;
    else fail(Status::unsupported, "metadata key '" + p + "expert_gating_func' has unsupported value " + num(gating) +
                                       " (supported: 1 softmax, 2 sigmoid)");
    e.weights_norm = meta_bool(f, p + "expert_weights_norm").value_or(false);
    e.weights_scale = meta_float(f, p + "expert_weights_scale").value_or(0.0);
    if (!std::isfinite(e.weights_scale) || e.weights_scale < 0.0)
        bad_key(p + "expert_weights_scale", "must be a finite number >= 0");

    e.n_group = meta_int(f, p + "expert_group_count").value_or(0);
    e.n_group_used = meta_int(f, p + "expert_group_used_count").value_or(0);
    if (e.n_group < 0 || e.n_group_used < 0) bad_key(p + "expert_group_count", "and expert_group_used_count must be >= 0");
    if (e.grouped()) {
        if (e.n_expert % e.n_group != 0)
            bad_key(p + "expert_group_count", "(" + num(e.n_group) + ") does not divide expert_count (" + num(e.n_expert) + ")");
        if (e.n_expert / e.n_group < 2)
            bad_key(p + "expert_group_count", "leaves fewer than 2 experts a group (a group is scored by its two best experts)");
        if (e.n_group_used < 1) bad_key(p + "expert_group_used_count", "must be positive when experts are grouped");
        if (e.n_expert_used > e.n_group_used * (e.n_expert / e.n_group))
            bad_key(p + "expert_used_count", "(" + num(e.n_expert_used) + ") exceeds the experts of the " + num(e.n_group_used) +
                                                 " groups kept");
    }
}

void read_deepseek2_hparams(const gguf::ModelFile& f, const std::string& p, Hparams& hp) {
    read_mla_widths(f, p, hp);
    read_rope(f, p, hp);
    RopeParams& r = hp.rope;
    if (r.scaling == RopeScaling::linear && r.factor != 1.0)
        fail(Status::unsupported, "metadata key '" + p + "rope.scaling.type' is linear with factor " + std::to_string(r.factor) +
                                      ": the deepseek2 graph supports only none or yarn scaling");
    r.unit_magnitude = true;
    r.yarn_log_mul = meta_float(f, p + "rope.scaling.yarn_log_multiplier").value_or(0.0);
    if (!std::isfinite(r.yarn_log_mul)) bad_key(p + "rope.scaling.yarn_log_multiplier", "must be finite");
    // Without the multiplier the YaRN temperature is ambiguous: llama.cpp then rotates with
    // magnitude 1 + 0.1 ln(factor) and squares that into the scale, the HF model leaves the scale
    // alone (mscale_all_dim 0). DeepSeek-V3 and Kimi K2 files carry 0.1 (mscale_all_dim 1).
    if (r.scaling == RopeScaling::yarn && r.factor != 1.0 && !(r.yarn_log_mul > 0.0))
        fail(Status::unsupported, "metadata key '" + p + "rope.scaling.yarn_log_multiplier' is " +
                                      (meta_float(f, p + "rope.scaling.yarn_log_multiplier") ? "not positive" : "missing") +
                                      " with YaRN scaling: the attention temperature is then ambiguous (llama.cpp and the "
                                      "original model differ), so this deepseek2 file is refused");
    // DeepSeek's softmax scale: q_head_dim^-0.5 * mscale^2, mscale the YaRN temperature.
    double mscale = r.attn_factor;
    if (r.scaling == RopeScaling::yarn) mscale *= 1.0 + r.yarn_log_mul * std::log(r.factor);
    hp.mla.kq_scale = mscale * mscale / std::sqrt(double(hp.head_dim));
    read_moe_routing(f, p, hp);
}

}  // namespace strata::model
