// deepseek2 for strata-mkmodel (see mkmodel_deepseek2.hpp and lib/model/deepseek2.md).
#include "mkmodel_deepseek2.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "common/cli_args.hpp"
#include "mkmodel_moe.hpp"

namespace mkmodel {
namespace {

using cli::usage_error;

Deepseek2 preset(const std::string& name) {
    Deepseek2 m{};
    if (name == "tiny") {
        m.n_embd = 256, m.n_layer = 3, m.n_ff = 512, m.n_vocab = 384, m.n_head = 4, m.n_ctx = 4096;
        m.q_lora = 256, m.kv_lora = 256, m.qk_nope = 64, m.qk_rope = 32, m.v_head_dim = 64;
        m.n_ff_exp = 256, m.n_expert = 8, m.n_expert_used = 2, m.n_expert_shared = 1, m.n_dense_lead = 1;
        m.n_group = 0, m.n_group_used = 0;
        m.weights_scale = 2.5;
        m.rope_factor = 8, m.rope_orig_ctx = 512, m.yarn_beta_fast = 32, m.yarn_beta_slow = 1;
        m.freq_base = 10000;
    } else if (name == "k2-slice") {  // Kimi K2's layer dimensions, 1 dense + 1 MoE layer
        m.n_embd = 7168, m.n_layer = 2, m.n_ff = 18432, m.n_vocab = 32000, m.n_head = 64, m.n_ctx = 131072;
        m.q_lora = 1536, m.kv_lora = 512, m.qk_nope = 128, m.qk_rope = 64, m.v_head_dim = 128;
        m.n_ff_exp = 2048, m.n_expert = 384, m.n_expert_used = 8, m.n_expert_shared = 1, m.n_dense_lead = 1;
        m.n_group = 1, m.n_group_used = 1;  // as Kimi K2 writes them (no grouping)
        m.weights_scale = 2.827;
        m.rope_factor = 32, m.rope_orig_ctx = 4096, m.yarn_beta_fast = 1, m.yarn_beta_slow = 1;
        m.freq_base = 50000;
    } else {
        throw usage_error("unknown preset '" + name + "' for --arch deepseek2 (tiny, k2-slice)");
    }
    m.sigmoid = m.score_bias = m.weights_norm = true;
    m.yarn = true;
    m.yarn_log_mul = 0.1;
    m.rms_eps = 1e-6;
    return m;
}

// The integer fields only deepseek2's flags set.
const IntegerFields<Deepseek2> own_integer_fields = {
    {"--n-group", &Deepseek2::n_group, 1},
    {"--n-group-used", &Deepseek2::n_group_used, 1},
};

double real(const std::string& flag, const std::string& text, bool positive) {
    const std::optional<double> v = cli::to_number<double>(text);
    if (!v || !std::isfinite(*v) || (positive ? !(*v > 0.0) : *v < 0.0))
        throw usage_error(flag + " needs a " + (positive ? "positive" : "non-negative") + " number, got '" + text + "'");
    return *v;
}

void check(const Deepseek2& m, bool groups_paired, int weight_type, const std::string& type_name) {
    check_moe(m.n_expert, m.n_expert_used, m.n_dense_lead, m.n_layer);
    if (m.qk_rope % 2) throw usage_error("--qk-rope must be even (RoPE rotates pairs), got " + str(m.qk_rope));
    if (!groups_paired) throw usage_error("--n-group and --n-group-used go together");
    if (m.n_group > 0) {
        if (m.n_expert % m.n_group)
            throw usage_error("--n-group " + str(m.n_group) + " does not divide --n-expert " + str(m.n_expert));
        if (m.n_group_used > m.n_group)
            throw usage_error("--n-group-used " + str(m.n_group_used) + " is more than --n-group " + str(m.n_group));
        const int64_t per_group = m.n_expert / m.n_group;
        if (m.n_group > 1 && per_group < 2)
            throw usage_error("--n-group " + str(m.n_group) + " leaves " + str(per_group) +
                              " expert per group; a group scores by its two best experts, so it needs at least 2");
        if (m.n_group_used * per_group < m.n_expert_used)
            throw usage_error("--n-group-used " + str(m.n_group_used) + " keeps " + str(m.n_group_used * per_group) +
                              " experts eligible, fewer than --n-expert-used " + str(m.n_expert_used));
    }
    // Every tensor's value count must fit comfortably in an int64 (2^40 values: 4 TB as float32).
    const double E = double(m.n_embd), H = double(m.n_head), qk = double(m.qk_nope + m.qk_rope);
    const double C = double(m.kv_lora), kv = double(m.qk_nope + m.v_head_dim);
    check_sizes({{"--n-embd * --n-ff-exp * --n-expert", E * double(m.n_ff_exp) * double(m.n_expert)},
                 {"--n-embd * --n-ff-exp * --n-expert-shared", E * double(m.n_ff_exp) * double(m.n_expert_shared)},
                 {"--n-head * (--qk-nope + --qk-rope) * max(--n-embd, --q-lora)",
                  H * qk * std::max(E, double(m.q_lora))},
                 {"--n-head * --kv-lora * (--qk-nope + --v-head-dim)", H * C * kv},
                 {"--n-head * --v-head-dim * --n-embd", H * double(m.v_head_dim) * E}});
    check_embd_block(m.n_embd, weight_type, type_name, "deepseek2");
}

}  // namespace

bool deepseek2_value_flag(const std::string& flag) {
    static const std::vector<std::string> flags = {
        "--n-expert", "--n-expert-used", "--n-expert-shared", "--n-ff-exp", "--n-dense-lead", "--q-lora",
        "--kv-lora", "--qk-nope", "--qk-rope", "--v-head-dim", "--gating", "--n-group", "--n-group-used",
        "--yarn-log-mul", "--yarn-beta-fast", "--yarn-beta-slow", "--weights-scale"};
    for (const auto& f : flags)
        if (flag == f) return true;
    return false;
}

bool deepseek2_switch(const std::string& flag) {
    return flag == "--no-score-bias" || flag == "--legacy-kv-b" || flag == "--no-weights-norm";
}

Deepseek2 parse_deepseek2(const std::string& preset_name, const std::vector<std::pair<std::string, std::string>>& flags,
                          const RopeFlags& rope, int weight_type, const std::string& type_name, int64_t min_vocab) {
    Deepseek2 m = preset(preset_name);
    bool groups_given = false, group_used_given = false, yarn_flags = false;
    for (const auto& [flag, text] : flags) {
        if (const auto field = integer_field(flag, own_integer_fields)) {
            m.*(field->first) = integer_value(flag, text, field->second);
            groups_given |= flag == "--n-group";
            group_used_given |= flag == "--n-group-used";
        } else if (flag == "--gating") {
            if (text != "softmax" && text != "sigmoid")
                throw usage_error("unsupported --gating '" + text + "' (softmax, sigmoid)");
            m.sigmoid = text == "sigmoid";
        } else if (flag == "--yarn-log-mul") {
            m.yarn_log_mul = real(flag, text, false), yarn_flags = true;
        } else if (flag == "--yarn-beta-fast") {
            m.yarn_beta_fast = real(flag, text, true), yarn_flags = true;
        } else if (flag == "--yarn-beta-slow") {
            m.yarn_beta_slow = real(flag, text, true), yarn_flags = true;
        } else if (flag == "--weights-scale") {
            m.weights_scale = real(flag, text, false);
        } else if (flag == "--no-score-bias") {
            m.score_bias = false;
        } else if (flag == "--no-weights-norm") {
            m.weights_norm = false;
        } else if (flag == "--legacy-kv-b") {
            m.legacy_kv_b = true;
        } else if (flag == "--n-head-kv" || flag == "--head-dim") {
            throw usage_error(flag + " is not for --arch deepseek2 (MLA: --kv-lora, --qk-nope, --qk-rope, --v-head-dim)");
        } else {
            throw usage_error("unknown argument " + flag);
        }
    }
    check(m, groups_given == group_used_given, weight_type, type_name);

    // RoPE: the presets are YaRN; --rope-scaling none turns it off, linear is not in the graph.
    if (rope.scaling_given) {
        if (rope.scaling == "linear")
            throw usage_error("--rope-scaling linear is not supported by the deepseek2 graph (none, yarn)");
        if (rope.scaling != "none" && rope.scaling != "yarn")
            throw usage_error("unsupported --rope-scaling '" + rope.scaling + "' (none, yarn)");
        m.yarn = rope.scaling == "yarn";
    }
    if (!m.yarn && (rope.factor_given || rope.orig_ctx_given || yarn_flags))
        throw usage_error("--rope-factor, --rope-orig-ctx and --yarn-* need --rope-scaling yarn");
    if (rope.factor_given) m.rope_factor = rope.factor;
    if (rope.orig_ctx_given) m.rope_orig_ctx = rope.orig_ctx;

    check_vocab(m.n_vocab, min_vocab);
    return m;
}

std::vector<TensorSpec> plan_deepseek2(const Deepseek2& m, int weight_type) {
    const int64_t E = m.n_embd, H = m.n_head, C = m.kv_lora, R = m.qk_rope, nope = m.qk_nope, v = m.v_head_dim;
    const int64_t n_shexp = m.n_ff_exp * m.n_expert_shared;
    PlanBuilder b(weight_type);

    b.add("token_embd.weight", weight_type, {E, m.n_vocab}, false, 0.0f, 1.0f);
    for (int64_t l = 0; l < m.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        b.norm(p + "attn_norm.weight", E);
        b.mla_q_kv_a(p, E, H, m.q_lora, C, nope, R);
        if (m.legacy_kv_b) {
            b.matrix(p + "attn_kv_b.weight", {C, H * (nope + v)});
        } else {
            // Both taken from the attn_kv_b the legacy form of this seed has (same generator).
            const uint64_t kv_b_key = name_key(p + "attn_kv_b.weight");
            const float stddev = 1.0f / std::sqrt(float(C));
            TensorSpec* k_b = b.matrix(p + "attn_k_b.weight", {nope, C, H});
            k_b->key = kv_b_key, k_b->b = stddev, k_b->derive = Derive::k_b, k_b->kv_other = v;
            TensorSpec* v_b = b.matrix(p + "attn_v_b.weight", {C, v, H});
            v_b->key = kv_b_key, v_b->b = stddev, v_b->derive = Derive::v_b, v_b->kv_other = nope;
        }
        b.matrix(p + "attn_output.weight", {H * v, E});
        b.norm(p + "ffn_norm.weight", E);
        if (l < m.n_dense_lead) {
            b.dense_ffn(p, E, m.n_ff);
            continue;
        }
        b.add(p + "ffn_gate_inp.weight", STRATA_TYPE_F32, {E, m.n_expert}, false, 0.0f, 1.0f / std::sqrt(float(E)));
        if (m.score_bias) b.add(p + "exp_probs_b.bias", STRATA_TYPE_F32, {m.n_expert}, false, 0.0f, 0.02f);
        b.experts(p, E, E, m.n_ff_exp, m.n_expert, n_shexp);
    }
    b.norm("output_norm.weight", E);
    b.matrix("output.weight", {E, m.n_vocab});
    return b.take();
}

void add_deepseek2_metadata(strata::writer& w, const Deepseek2& m) {
    const ArchKeys k(w, "deepseek2");
    k.shape(m.n_ctx, m.n_embd, m.n_layer);
    k.u32("feed_forward_length", m.n_ff);
    k.u32("attention.head_count", m.n_head);
    if (m.legacy_kv_b) {  // the decompressed heads
        k.u32("attention.head_count_kv", m.n_head);
        k.u32("attention.key_length", m.qk_nope + m.qk_rope);
        k.u32("attention.value_length", m.v_head_dim);
    } else {  // the absorbed form: one latent "head" shared by all
        k.u32("attention.head_count_kv", 1);
        k.u32("attention.key_length", m.kv_lora + m.qk_rope);
        k.u32("attention.value_length", m.kv_lora);
        k.u32("attention.key_length_mla", m.qk_nope + m.qk_rope);
        k.u32("attention.value_length_mla", m.v_head_dim);
    }
    if (m.q_lora > 0) k.u32("attention.q_lora_rank", m.q_lora);  // absent: a full attn_q, as llama.cpp writes it
    k.u32("attention.kv_lora_rank", m.kv_lora);
    k.f32("attention.layer_norm_rms_epsilon", m.rms_eps);
    k.u32("rope.dimension_count", m.qk_rope);
    k.f32("rope.freq_base", m.freq_base);
    if (m.yarn) {
        k.string("rope.scaling.type", "yarn");
        k.f32("rope.scaling.factor", m.rope_factor);
        k.u32("rope.scaling.original_context_length", m.rope_orig_ctx);
        k.f32("rope.scaling.yarn_log_multiplier", m.yarn_log_mul);
        k.f32("rope.scaling.yarn_beta_fast", m.yarn_beta_fast);
        k.f32("rope.scaling.yarn_beta_slow", m.yarn_beta_slow);
    }
    k.u32("leading_dense_block_count", m.n_dense_lead);
    k.experts(m.n_expert, m.n_expert_used, m.n_expert_shared, m.n_ff_exp, m.sigmoid ? 2 : 1, m.weights_norm,
              m.weights_scale);
    if (m.n_group > 0) {
        k.u32("expert_group_count", m.n_group);
        k.u32("expert_group_used_count", m.n_group_used);
    }
    k.u32("vocab_size", m.n_vocab);
}

}  // namespace mkmodel
