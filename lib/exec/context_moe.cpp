// The MoE FFN block (deepseek2.md, "MoE"): route every token, run each chosen expert once over
// all the tokens that chose it (its weights read once per micro-batch), add the shared experts.
// A token's expert outputs are summed in ascending expert order whatever the batch, so one-token
// decode reproduces prefill exactly.
#include <algorithm>

#include "exec/context.hpp"
#include "exec/context_scratch.hpp"
#include "exec/ops.hpp"

namespace strata::exec {

void Context::ffn_moe(int64_t li, int64_t n) {
    const model::LayerWeights& L = w_.layers[size_t(li)];
    const model::MoeParams& e = hp_.moe;
    const int64_t E = hp_.n_embd, K = e.n_expert_used, F = e.n_ff_exp;
    Backend& be = *backend_;
    Scratch& s = *s_;

    be.matmul(L.gate_inp, s.xn.data(), n, s.router.data());
    for (int64_t t = 0; t < n; ++t)
        s.router_state->route(s.router.data() + t * e.n_expert, L.exp_probs_b.empty() ? nullptr : L.exp_probs_b.data(),
                              s.chosen.data() + t * K, s.chosen_w.data() + t * K);

    std::fill(s.moe_out.begin(), s.moe_out.begin() + n * E, 0.0f);
    std::vector<int64_t> tokens;
    std::vector<float> weight;
    for (int64_t x = 0; x < e.n_expert; ++x) {
        tokens.clear();
        weight.clear();
        for (int64_t t = 0; t < n; ++t)
            for (int64_t i = 0; i < K; ++i)
                if (s.chosen[size_t(t * K + i)] == x) {
                    tokens.push_back(t);
                    weight.push_back(s.chosen_w[size_t(t * K + i)]);
                }
        if (tokens.empty()) continue;
        const int64_t m = int64_t(tokens.size());
        for (int64_t j = 0; j < m; ++j)
            std::copy(s.xn.data() + tokens[size_t(j)] * E, s.xn.data() + (tokens[size_t(j)] + 1) * E, s.xe.data() + j * E);
        be.matmul(L.gate_exps.mat(x), s.xe.data(), m, s.ge.data());
        be.matmul(L.up_exps.mat(x), s.xe.data(), m, s.ue.data());
        swiglu(s.ge.data(), s.ue.data(), m * F);
        be.matmul(L.down_exps.mat(x), s.ge.data(), m, s.de.data());
        for (int64_t j = 0; j < m; ++j) {
            float* out = s.moe_out.data() + tokens[size_t(j)] * E;
            const float* d = s.de.data() + j * E;
            const float w = weight[size_t(j)];
            for (int64_t c = 0; c < E; ++c) out[c] += w * d[c];
        }
    }
    if (L.gate_shexp.present()) {
        ffn_dense(L.gate_shexp, L.up_shexp, L.down_shexp, n, s.proj.data());
        add_inplace(s.proj.data(), s.moe_out.data(), n * E);  // shared + routed, as llama.cpp adds them
    } else {
        std::copy(s.moe_out.begin(), s.moe_out.begin() + n * E, s.proj.begin());
    }
}

}  // namespace strata::exec
