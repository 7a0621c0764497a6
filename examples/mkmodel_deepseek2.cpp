// deepseek2 for strata-mkmodel (see mkmodel_deepseek2.hpp and lib/model/deepseek2.md).
#include "mkmodel_deepseek2.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "cli_args.hpp"

namespace mkmodel {
namespace {

using cli::usage_error;

std::string str(int64_t v) { return std::to_string(v); }

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

// The integer fields a flag sets, with the smallest value it takes.
std::optional<std::pair<int64_t Deepseek2::*, int64_t>> integer_field(const std::string& flag) {
    using F = int64_t Deepseek2::*;
    static const std::vector<std::tuple<const char*, F, int64_t>> fields = {
        {"--n-embd", &Deepseek2::n_embd, 1},           {"--n-layer", &Deepseek2::n_layer, 1},
        {"--n-ff", &Deepseek2::n_ff, 1},               {"--n-vocab", &Deepseek2::n_vocab, 1},
        {"--n-head", &Deepseek2::n_head, 1},           {"--n-ctx", &Deepseek2::n_ctx, 1},
        {"--n-expert", &Deepseek2::n_expert, 1},       {"--n-expert-used", &Deepseek2::n_expert_used, 1},
        {"--n-expert-shared", &Deepseek2::n_expert_shared, 0}, {"--n-ff-exp", &Deepseek2::n_ff_exp, 1},
        {"--n-dense-lead", &Deepseek2::n_dense_lead, 0}, {"--q-lora", &Deepseek2::q_lora, 0},
        {"--kv-lora", &Deepseek2::kv_lora, 1},         {"--qk-nope", &Deepseek2::qk_nope, 1},
        {"--qk-rope", &Deepseek2::qk_rope, 1},         {"--v-head-dim", &Deepseek2::v_head_dim, 1},
        {"--n-group", &Deepseek2::n_group, 1},         {"--n-group-used", &Deepseek2::n_group_used, 1},
    };
    for (const auto& [name, field, min] : fields)
        if (flag == name) return std::make_pair(field, min);
    return std::nullopt;
}

double real(const std::string& flag, const std::string& text, bool positive) {
    const std::optional<double> v = cli::to_number<double>(text);
    if (!v || !std::isfinite(*v) || (positive ? !(*v > 0.0) : *v < 0.0))
        throw usage_error(flag + " needs a " + (positive ? "positive" : "non-negative") + " number, got '" + text + "'");
    return *v;
}

void check(const Deepseek2& m, bool groups_paired, int weight_type, const std::string& type_name) {
    if (m.n_expert_used > m.n_expert)
        throw usage_error("--n-expert-used " + str(m.n_expert_used) + " is more than --n-expert " + str(m.n_expert));
    if (m.n_dense_lead > m.n_layer)
        throw usage_error("--n-dense-lead " + str(m.n_dense_lead) + " is more than --n-layer " + str(m.n_layer));
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
    for (const auto& [what, n] : {std::pair<const char*, double>{"--n-embd * --n-ff-exp * --n-expert",
                                                                 E * double(m.n_ff_exp) * double(m.n_expert)},
                                  {"--n-embd * --n-ff-exp * --n-expert-shared",
                                   E * double(m.n_ff_exp) * double(m.n_expert_shared)},
                                  {"--n-head * (--qk-nope + --qk-rope) * max(--n-embd, --q-lora)",
                                   H * qk * std::max(E, double(m.q_lora))},
                                  {"--n-head * --kv-lora * (--qk-nope + --v-head-dim)", H * C * kv},
                                  {"--n-head * --v-head-dim * --n-embd", H * double(m.v_head_dim) * E}})
        if (n > double(int64_t(1) << 40)) throw usage_error(std::string(what) + " is too large");
    const int64_t block = block_size(weight_type);
    if (m.n_embd % block)
        throw usage_error("--n-embd " + str(m.n_embd) + " gives rows of " + str(m.n_embd) + " values, not a multiple of " +
                          str(block) + " as --type " + type_name +
                          " needs (deepseek2 keeps the main weights' rows of n_embd in --type; only the other "
                          "matrices fall back to q8_0 or f16)");
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
        if (const auto field = integer_field(flag)) {
            const std::optional<int64_t> v = cli::to_number<int64_t>(text);
            if (!v || *v < field->second)
                throw usage_error(flag + " needs " + (field->second > 0 ? "a positive" : "a non-negative") +
                                  " integer, got '" + text + "'");
            if (*v > (int64_t(1) << 31)) throw usage_error(flag + " is too large: " + text);
            m.*(field->first) = *v;
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

    if (m.n_vocab < min_vocab)
        throw usage_error("--n-vocab " + str(m.n_vocab) + " is too small for the vocabulary (at least " +
                          str(min_vocab) + ")");
    return m;
}

std::vector<TensorSpec> plan_deepseek2(const Deepseek2& m, int weight_type) {
    const int64_t E = m.n_embd, H = m.n_head, C = m.kv_lora, R = m.qk_rope, nope = m.qk_nope, v = m.v_head_dim;
    const int64_t n_shexp = m.n_ff_exp * m.n_expert_shared;
    std::vector<TensorSpec> t;
    auto add = [&](const std::string& name, int type, std::vector<int64_t> shape, bool uniform, float a, float b) {
        TensorSpec s{name, type, std::move(shape), uniform, a, b};
        s.key = name_key(name);
        t.push_back(std::move(s));
        return &t.back();
    };
    // A weight matrix (or a stack of them): rows of shape[0] values, stddev 1/sqrt(row).
    auto matrix = [&](const std::string& name, std::vector<int64_t> shape) {
        const int type = row_type(weight_type, shape[0]);
        const float stddev = 1.0f / std::sqrt(float(shape[0]));
        TensorSpec* s = add(name, type, std::move(shape), false, 0.0f, stddev);
        if (type != weight_type) s->requested = weight_type;
        return s;
    };
    auto norm = [&](const std::string& name, int64_t n) { add(name, STRATA_TYPE_F32, {n}, true, 0.8f, 1.2f); };

    add("token_embd.weight", weight_type, {E, m.n_vocab}, false, 0.0f, 1.0f);
    for (int64_t l = 0; l < m.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        norm(p + "attn_norm.weight", E);
        if (m.q_lora > 0) {
            matrix(p + "attn_q_a.weight", {E, m.q_lora});
            norm(p + "attn_q_a_norm.weight", m.q_lora);
            matrix(p + "attn_q_b.weight", {m.q_lora, H * (nope + R)});
        } else {
            matrix(p + "attn_q.weight", {E, H * (nope + R)});
        }
        matrix(p + "attn_kv_a_mqa.weight", {E, C + R});
        norm(p + "attn_kv_a_norm.weight", C);
        if (m.legacy_kv_b) {
            matrix(p + "attn_kv_b.weight", {C, H * (nope + v)});
        } else {
            // Both taken from the attn_kv_b the legacy form of this seed has (same generator).
            const uint64_t kv_b_key = name_key(p + "attn_kv_b.weight");
            const float stddev = 1.0f / std::sqrt(float(C));
            TensorSpec* k_b = matrix(p + "attn_k_b.weight", {nope, C, H});
            k_b->key = kv_b_key, k_b->b = stddev, k_b->derive = Derive::k_b, k_b->kv_other = v;
            TensorSpec* v_b = matrix(p + "attn_v_b.weight", {C, v, H});
            v_b->key = kv_b_key, v_b->b = stddev, v_b->derive = Derive::v_b, v_b->kv_other = nope;
        }
        matrix(p + "attn_output.weight", {H * v, E});
        norm(p + "ffn_norm.weight", E);
        if (l < m.n_dense_lead) {
            matrix(p + "ffn_gate.weight", {E, m.n_ff});
            matrix(p + "ffn_up.weight", {E, m.n_ff});
            matrix(p + "ffn_down.weight", {m.n_ff, E});
            continue;
        }
        add(p + "ffn_gate_inp.weight", STRATA_TYPE_F32, {E, m.n_expert}, false, 0.0f, 1.0f / std::sqrt(float(E)));
        if (m.score_bias) add(p + "exp_probs_b.bias", STRATA_TYPE_F32, {m.n_expert}, false, 0.0f, 0.02f);
        matrix(p + "ffn_gate_exps.weight", {E, m.n_ff_exp, m.n_expert})->per_slice = true;
        matrix(p + "ffn_up_exps.weight", {E, m.n_ff_exp, m.n_expert})->per_slice = true;
        matrix(p + "ffn_down_exps.weight", {m.n_ff_exp, E, m.n_expert})->per_slice = true;
        if (n_shexp > 0) {
            matrix(p + "ffn_gate_shexp.weight", {E, n_shexp});
            matrix(p + "ffn_up_shexp.weight", {E, n_shexp});
            matrix(p + "ffn_down_shexp.weight", {n_shexp, E});
        }
    }
    norm("output_norm.weight", E);
    matrix("output.weight", {E, m.n_vocab});
    return t;
}

void add_deepseek2_metadata(strata::writer& w, const Deepseek2& m) {
    const std::string a = "deepseek2.";
    auto u32 = [&](const std::string& key, int64_t value) { w.set_uint(a + key, STRATA_VALUE_U32, uint64_t(value)); };
    auto f32 = [&](const std::string& key, double value) { w.set_float(a + key, STRATA_VALUE_F32, value); };
    u32("context_length", m.n_ctx);
    u32("embedding_length", m.n_embd);
    u32("block_count", m.n_layer);
    u32("feed_forward_length", m.n_ff);
    u32("attention.head_count", m.n_head);
    if (m.legacy_kv_b) {  // the decompressed heads
        u32("attention.head_count_kv", m.n_head);
        u32("attention.key_length", m.qk_nope + m.qk_rope);
        u32("attention.value_length", m.v_head_dim);
    } else {  // the absorbed form: one latent "head" shared by all
        u32("attention.head_count_kv", 1);
        u32("attention.key_length", m.kv_lora + m.qk_rope);
        u32("attention.value_length", m.kv_lora);
        u32("attention.key_length_mla", m.qk_nope + m.qk_rope);
        u32("attention.value_length_mla", m.v_head_dim);
    }
    if (m.q_lora > 0) u32("attention.q_lora_rank", m.q_lora);  // absent: a full attn_q, as llama.cpp writes it
    u32("attention.kv_lora_rank", m.kv_lora);
    f32("attention.layer_norm_rms_epsilon", m.rms_eps);
    u32("rope.dimension_count", m.qk_rope);
    f32("rope.freq_base", m.freq_base);
    if (m.yarn) {
        w.set_string(a + "rope.scaling.type", "yarn");
        f32("rope.scaling.factor", m.rope_factor);
        u32("rope.scaling.original_context_length", m.rope_orig_ctx);
        f32("rope.scaling.yarn_log_multiplier", m.yarn_log_mul);
        f32("rope.scaling.yarn_beta_fast", m.yarn_beta_fast);
        f32("rope.scaling.yarn_beta_slow", m.yarn_beta_slow);
    }
    u32("leading_dense_block_count", m.n_dense_lead);
    u32("expert_count", m.n_expert);
    u32("expert_used_count", m.n_expert_used);
    u32("expert_shared_count", m.n_expert_shared);
    u32("expert_feed_forward_length", m.n_ff_exp);
    u32("expert_gating_func", m.sigmoid ? 2 : 1);
    w.set_bool(a + "expert_weights_norm", m.weights_norm);
    f32("expert_weights_scale", m.weights_scale);
    if (m.n_group > 0) {
        u32("expert_group_count", m.n_group);
        u32("expert_group_used_count", m.n_group_used);
    }
    u32("vocab_size", m.n_vocab);
}

}  // namespace mkmodel
