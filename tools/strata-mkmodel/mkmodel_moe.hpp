// What deepseek2 and the Kimi architectures share in strata-mkmodel: the integer shape flags and
// the MoE checks, and the tensor-plan pieces (MLA's query and compressed KV, the dense and the
// expert feed-forwards) in llama.cpp's names and shapes. Public headers only.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mkmodel_plan.hpp"
#include "strata/strata.hpp"

namespace mkmodel {

std::string str(int64_t v);

// The integer field an integer flag sets in an `M` (Deepseek2, Kimi) and the smallest value it
// takes: the flags both architectures share, then M's own `extra` ones.
template <class M>
using IntegerFields = std::vector<std::tuple<const char*, int64_t M::*, int64_t>>;

template <class M>
std::optional<std::pair<int64_t M::*, int64_t>> integer_field(const std::string& flag, const IntegerFields<M>& extra) {
    static const IntegerFields<M> shared = {
        {"--n-embd", &M::n_embd, 1},           {"--n-layer", &M::n_layer, 1},
        {"--n-ff", &M::n_ff, 1},               {"--n-vocab", &M::n_vocab, 1},
        {"--n-head", &M::n_head, 1},           {"--n-ctx", &M::n_ctx, 1},
        {"--n-expert", &M::n_expert, 1},       {"--n-expert-used", &M::n_expert_used, 1},
        {"--n-expert-shared", &M::n_expert_shared, 0}, {"--n-ff-exp", &M::n_ff_exp, 1},
        {"--n-dense-lead", &M::n_dense_lead, 0}, {"--q-lora", &M::q_lora, 0},
        {"--kv-lora", &M::kv_lora, 1},         {"--qk-nope", &M::qk_nope, 1},
        {"--qk-rope", &M::qk_rope, 1},         {"--v-head-dim", &M::v_head_dim, 1},
    };
    for (const auto* fields : {&shared, &extra})
        for (const auto& [name, field, min] : *fields)
            if (flag == name) return std::make_pair(field, min);
    return std::nullopt;
}

// The value of integer flag `flag` (at least `min`, at most 2^31); throws cli::usage_error.
int64_t integer_value(const std::string& flag, const std::string& text, int64_t min);

// --n-expert-used within --n-expert, --n-dense-lead within --n-layer.
void check_moe(int64_t n_expert, int64_t n_expert_used, int64_t n_dense_lead, int64_t n_layer);
// Every tensor's value count must fit comfortably in an int64 (2^40 values: 4 TB as float32).
void check_sizes(std::initializer_list<std::pair<const char*, double>> counts);
// --n-embd a multiple of `weight_type`'s block (`arch` keeps the rows of n_embd in --type).
void check_embd_block(int64_t n_embd, int weight_type, const std::string& type_name, const std::string& arch);
void check_vocab(int64_t n_vocab, int64_t min_vocab);

// The metadata keys of one architecture, each written as "<arch>.<key>".
class ArchKeys {
public:
    ArchKeys(strata::writer& w, const std::string& arch) : w_(w), a_(arch + ".") {}

    void u32(const std::string& key, int64_t value) const;
    void u32_array(const std::string& key, const std::vector<uint32_t>& values) const;
    void f32(const std::string& key, double value) const;
    void boolean(const std::string& key, bool value) const;
    void string(const std::string& key, const std::string& value) const;
    // context_length, embedding_length, block_count.
    void shape(int64_t n_ctx, int64_t n_embd, int64_t n_layer) const;
    // expert_count, expert_used_count, expert_shared_count, expert_feed_forward_length,
    // expert_gating_func (1 softmax, 2 sigmoid), expert_weights_norm (if given), expert_weights_scale.
    void experts(int64_t n_expert, int64_t n_expert_used, int64_t n_expert_shared, int64_t n_ff_exp, int gating,
                 std::optional<bool> weights_norm, double weights_scale) const;

private:
    strata::writer& w_;
    std::string a_;
};

// A tensor plan under construction.
class PlanBuilder {
public:
    explicit PlanBuilder(int weight_type) : weight_type_(weight_type) {}

    TensorSpec* add(const std::string& name, int type, std::vector<int64_t> shape, bool uniform, float a, float b);
    // A weight matrix (or a stack of them): rows of shape[0] values, stddev 1/sqrt(row).
    TensorSpec* matrix(const std::string& name, std::vector<int64_t> shape);
    void norm(const std::string& name, int64_t n);
    void f32_normal(const std::string& name, std::vector<int64_t> shape, float stddev);

    // MLA's query (attn_q_a, its norm and attn_q_b, or a full attn_q with q_lora 0) and the
    // compressed KV (attn_kv_a_mqa and its norm), blk.N. prefix `p`.
    void mla_q_kv_a(const std::string& p, int64_t n_embd, int64_t n_head, int64_t q_lora, int64_t kv_lora,
                    int64_t qk_nope, int64_t qk_rope);
    // ffn_gate, ffn_up and ffn_down (with `suffix`, e.g. _shexp, before .weight).
    void dense_ffn(const std::string& p, int64_t n_embd, int64_t n_ff, const std::string& suffix = "");
    // The routed experts (rows of `expert_embd`, per slice) and the shared ones (n_shexp wide, if any).
    void experts(const std::string& p, int64_t n_embd, int64_t expert_embd, int64_t n_ff_exp, int64_t n_expert,
                 int64_t n_shexp);

    std::vector<TensorSpec> take() { return std::move(t_); }

private:
    int weight_type_;
    std::vector<TensorSpec> t_;
};

}  // namespace mkmodel
