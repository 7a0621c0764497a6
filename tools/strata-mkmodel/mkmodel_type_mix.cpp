#include "mkmodel_type_mix.hpp"

#include <stdexcept>

#include "strata/strata.h"

namespace mkmodel {

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The Kimi K2 UD-IQ1_S-like choice for one tensor name.
int kimi_ud_iq1s(const std::string& name) {
    if (name == "token_embd.weight") return STRATA_TYPE_Q4_K;
    if (name == "output.weight") return STRATA_TYPE_Q6_K;
    if (contains(name, "ffn_gate_exps") || contains(name, "ffn_up_exps")) return STRATA_TYPE_IQ1_S;
    if (contains(name, "ffn_down_exps")) return STRATA_TYPE_IQ1_M;
    if (contains(name, "attn_k_b") || contains(name, "attn_v_b")) return STRATA_TYPE_Q8_0;
    if (contains(name, "attn_kv_a_mqa")) return STRATA_TYPE_Q6_K;
    if (contains(name, "attn_q_a.")) return STRATA_TYPE_Q4_K;
    if (contains(name, "ffn_down")) return STRATA_TYPE_Q5_K;  // shared experts and dense layers
    if (contains(name, "ffn_gate") || contains(name, "ffn_up")) return STRATA_TYPE_Q4_K;
    return STRATA_TYPE_IQ4_XS;
}

}  // namespace

std::vector<std::string> type_mix_names() { return {"kimi-ud-iq1s"}; }

bool is_type_mix(const std::string& name) { return name == "kimi-ud-iq1s"; }

void apply_type_mix(const std::string& mix, std::vector<TensorSpec>& specs) {
    if (!is_type_mix(mix)) throw std::invalid_argument("unknown type mix '" + mix + "'");
    for (TensorSpec& s : specs) {
        if (s.type == STRATA_TYPE_F32 || s.shape.size() < 2) continue;  // norms, biases, routers
        const int want = kimi_ud_iq1s(s.name);
        s.type = row_type(want, s.shape[0]);
        s.requested = s.type == want ? -1 : want;
    }
}

int type_mix_file_type(const std::string& mix) {
    if (!is_type_mix(mix)) throw std::invalid_argument("unknown type mix '" + mix + "'");
    return 24;  // LLAMA_FTYPE_MOSTLY_IQ1_S
}

}  // namespace mkmodel
