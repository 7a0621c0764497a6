// The MoE FFN block (deepseek2.md, "MoE"): route every token, run each chosen expert once over
// all the tokens that chose it (its weights read once per micro-batch), add the shared experts.
// A token's expert outputs are summed in ascending expert order whatever the batch, so one-token
// decode reproduces prefill exactly (expert_groups.hpp).
#include <algorithm>

#include "context.hpp"
#include "context_scratch.hpp"
#include "exec/moe/expert_groups.hpp"
#include "exec/ops.hpp"

namespace strata::exec {

void Context::ffn_moe(int64_t li, int64_t n) {
    const model::LayerWeights& L = w_.layers[size_t(li)];
    const model::MoeParams& e = hp_.moe;
    const int64_t E = hp_.n_embd, K = e.n_expert_used, F = e.n_ff_exp;
    const int64_t Le = e.latent > 0 ? e.latent : E;  // K3: the experts run in the latent width
    Backend& be = *backend_;
    Scratch& s = *s_;

    be.matmul(L.gate_inp, s.xn.data(), n, s.router.data());  // the router scores the full width
    const float* in = s.xn.data();
    if (e.latent > 0) {
        be.matmul(L.routed_down, s.xn.data(), n, s.zlat.data());
        in = s.zlat.data();
    }
    for (int64_t t = 0; t < n; ++t) {
        const float margin =
            s.router_state->route(s.router.data() + t * e.n_expert, L.exp_probs_b.empty() ? nullptr : L.exp_probs_b.data(),
                                  s.chosen.data() + t * K, s.chosen_w.data() + t * K);
        if (t == n - 1) last_margin_ = std::min(last_margin_, margin);
    }

    // Group the routed (token, weight) pairs by expert (expert_groups.hpp).
    ExpertGroups& g = s.groups;
    g.build(s.chosen.data(), s.chosen_w.data(), n, K, e.n_expert);
    // Prefill copies n * K rows here (58 MB for 256 tokens of K2) and sums as many below: on one
    // thread they were time the other threads spent waiting.
    for_rows(n * K, [&](int64_t row) {
        const int64_t t = g.src_token[size_t(row)];
        std::copy(in + t * Le, in + (t + 1) * Le, s.xe.data() + row * Le);
    });
    // Every chosen expert's gate and up in one dispatch, then every down.
    std::vector<WeightView>& mats = s.mats;
    std::vector<MatmulJob>& jobs = s.jobs;
    mats.clear();
    jobs.clear();
    mats.reserve(size_t(2 * e.n_expert));
    for (int64_t x = 0; x < e.n_expert; ++x) {
        const int64_t r0 = g.first[size_t(x)], m = g.rows(x);
        if (m == 0) continue;
        mats.push_back(L.gate_exps.mat(x));
        jobs.push_back({&mats.back(), s.xe.data() + r0 * Le, m, s.ge.data() + r0 * F});
        mats.push_back(L.up_exps.mat(x));
        jobs.push_back({&mats.back(), s.xe.data() + r0 * Le, m, s.ue.data() + r0 * F});
    }
    be.matmul_many(jobs);
    activate(s.ge.data(), s.ue.data(), n * K * F);
    mats.clear();
    jobs.clear();
    for (int64_t x = 0; x < e.n_expert; ++x) {
        const int64_t r0 = g.first[size_t(x)], m = g.rows(x);
        if (m == 0) continue;
        mats.push_back(L.down_exps.mat(x));
        jobs.push_back({&mats.back(), s.ge.data() + r0 * F, m, s.de.data() + r0 * Le});
    }
    be.matmul_many(jobs);
    // A token's expert outputs summed in ascending expert order.
    for_rows(n, [&](int64_t t) {
        float* out = s.moe_out.data() + t * Le;
        std::fill(out, out + Le, 0.0f);
        for (int64_t j = 0; j < K; ++j) {
            const float* d = s.de.data() + int64_t(g.sum_rows[size_t(t * K + j)]) * Le;
            const float w = g.sum_weights[size_t(t * K + j)];
            for (int64_t c = 0; c < Le; ++c) out[c] += w * d[c];
        }
    });
    float* routed = s.moe_out.data();
    if (e.latent > 0) {  // back to full width, through the optional latent norm
        if (!L.routed_norm.empty())
            norm_rows(routed, L.routed_norm.data(), n, Le, routed);
        be.matmul(L.routed_up, routed, n, s.moe_up.data());
        routed = s.moe_up.data();
    }
    if (L.gate_shexp.present()) {
        ffn_dense(L.gate_shexp, L.up_shexp, L.down_shexp, n, s.proj.data());
        add_inplace(s.proj.data(), routed, n * E);  // shared + routed, as llama.cpp adds them
    } else {
        std::copy(routed, routed + n * E, s.proj.begin());
    }
}

}  // namespace strata::exec
