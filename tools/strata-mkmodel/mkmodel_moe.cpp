// The pieces deepseek2 and the Kimi architectures share (see mkmodel_moe.hpp).
#include "mkmodel_moe.hpp"

#include <cmath>
#include <optional>

#include "common/cli_args.hpp"

namespace mkmodel {

using cli::usage_error;

std::string str(int64_t v) { return std::to_string(v); }

int64_t integer_value(const std::string& flag, const std::string& text, int64_t min) {
    const std::optional<int64_t> v = cli::to_number<int64_t>(text);
    if (!v || *v < min)
        throw usage_error(flag + " needs " + (min > 0 ? "a positive" : "a non-negative") + " integer, got '" + text +
                          "'");
    if (*v > (int64_t(1) << 31)) throw usage_error(flag + " is too large: " + text);
    return *v;
}

void check_moe(int64_t n_expert, int64_t n_expert_used, int64_t n_dense_lead, int64_t n_layer) {
    if (n_expert_used > n_expert)
        throw usage_error("--n-expert-used " + str(n_expert_used) + " is more than --n-expert " + str(n_expert));
    if (n_dense_lead > n_layer)
        throw usage_error("--n-dense-lead " + str(n_dense_lead) + " is more than --n-layer " + str(n_layer));
}

void check_sizes(std::initializer_list<std::pair<const char*, double>> counts) {
    for (const auto& [what, n] : counts)
        if (n > double(int64_t(1) << 40)) throw usage_error(std::string(what) + " is too large");
}

void check_embd_block(int64_t n_embd, int weight_type, const std::string& type_name, const std::string& arch) {
    const int64_t block = block_size(weight_type);
    if (n_embd % block)
        throw usage_error("--n-embd " + str(n_embd) + " gives rows of " + str(n_embd) + " values, not a multiple of " +
                          str(block) + " as --type " + type_name + " needs (" + arch +
                          " keeps the main weights' rows of n_embd in --type; only the other matrices fall back to "
                          "q8_0 or f16)");
}

void check_vocab(int64_t n_vocab, int64_t min_vocab) {
    if (n_vocab < min_vocab)
        throw usage_error("--n-vocab " + str(n_vocab) + " is too small for the vocabulary (at least " +
                          str(min_vocab) + ")");
}

void ArchKeys::u32(const std::string& key, int64_t value) const {
    w_.set_uint(a_ + key, STRATA_VALUE_U32, uint64_t(value));
}

void ArchKeys::u32_array(const std::string& key, const std::vector<uint32_t>& values) const {
    w_.set_array(a_ + key, STRATA_VALUE_U32, values.data(), values.size());
}

void ArchKeys::f32(const std::string& key, double value) const { w_.set_float(a_ + key, STRATA_VALUE_F32, value); }

void ArchKeys::boolean(const std::string& key, bool value) const { w_.set_bool(a_ + key, value); }

void ArchKeys::string(const std::string& key, const std::string& value) const { w_.set_string(a_ + key, value); }

void ArchKeys::shape(int64_t n_ctx, int64_t n_embd, int64_t n_layer) const {
    u32("context_length", n_ctx);
    u32("embedding_length", n_embd);
    u32("block_count", n_layer);
}

void ArchKeys::experts(int64_t n_expert, int64_t n_expert_used, int64_t n_expert_shared, int64_t n_ff_exp, int gating,
                       std::optional<bool> weights_norm, double weights_scale) const {
    u32("expert_count", n_expert);
    u32("expert_used_count", n_expert_used);
    u32("expert_shared_count", n_expert_shared);
    u32("expert_feed_forward_length", n_ff_exp);
    u32("expert_gating_func", gating);
    if (weights_norm) boolean("expert_weights_norm", *weights_norm);
    f32("expert_weights_scale", weights_scale);
}

TensorSpec* PlanBuilder::add(const std::string& name, int type, std::vector<int64_t> shape, bool uniform, float a,
                             float b) {
    TensorSpec s{name, type, std::move(shape), uniform, a, b};
    s.key = name_key(name);
    t_.push_back(std::move(s));
    return &t_.back();
}

TensorSpec* PlanBuilder::matrix(const std::string& name, std::vector<int64_t> shape) {
    const int type = row_type(weight_type_, shape[0]);
    const float stddev = 1.0f / std::sqrt(float(shape[0]));
    TensorSpec* s = add(name, type, std::move(shape), false, 0.0f, stddev);
    if (type != weight_type_) s->requested = weight_type_;
    return s;
}

void PlanBuilder::norm(const std::string& name, int64_t n) { add(name, STRATA_TYPE_F32, {n}, true, 0.8f, 1.2f); }

void PlanBuilder::f32_normal(const std::string& name, std::vector<int64_t> shape, float stddev) {
    add(name, STRATA_TYPE_F32, std::move(shape), false, 0.0f, stddev);
}

void PlanBuilder::mla_q_kv_a(const std::string& p, int64_t n_embd, int64_t n_head, int64_t q_lora, int64_t kv_lora,
                             int64_t qk_nope, int64_t qk_rope) {
    const int64_t E = n_embd, q_row = n_head * (qk_nope + qk_rope);
    if (q_lora > 0) {
        matrix(p + "attn_q_a.weight", {E, q_lora});
        norm(p + "attn_q_a_norm.weight", q_lora);
        matrix(p + "attn_q_b.weight", {q_lora, q_row});
    } else {
        matrix(p + "attn_q.weight", {E, q_row});
    }
    matrix(p + "attn_kv_a_mqa.weight", {E, kv_lora + qk_rope});
    norm(p + "attn_kv_a_norm.weight", kv_lora);
}

void PlanBuilder::dense_ffn(const std::string& p, int64_t n_embd, int64_t n_ff, const std::string& suffix) {
    matrix(p + "ffn_gate" + suffix + ".weight", {n_embd, n_ff});
    matrix(p + "ffn_up" + suffix + ".weight", {n_embd, n_ff});
    matrix(p + "ffn_down" + suffix + ".weight", {n_ff, n_embd});
}

void PlanBuilder::experts(const std::string& p, int64_t n_embd, int64_t expert_embd, int64_t n_ff_exp,
                          int64_t n_expert, int64_t n_shexp) {
    matrix(p + "ffn_gate_exps.weight", {expert_embd, n_ff_exp, n_expert})->per_slice = true;
    matrix(p + "ffn_up_exps.weight", {expert_embd, n_ff_exp, n_expert})->per_slice = true;
    matrix(p + "ffn_down_exps.weight", {n_ff_exp, expert_embd, n_expert})->per_slice = true;
    if (n_shexp > 0) dense_ffn(p, n_embd, n_shexp, "_shexp");
}

}  // namespace mkmodel
