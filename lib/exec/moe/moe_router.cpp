#include "moe_router.hpp"

namespace strata::exec {

MoeRoute moe_route_of(const model::MoeParams& moe) {
    MoeRoute r;
    r.n_expert = int32_t(moe.n_expert);
    r.n_used = int32_t(moe.n_expert_used);
    r.n_group = int32_t(moe.n_group);
    r.n_group_used = int32_t(moe.n_group_used);
    r.sigmoid = moe.gating == model::ExpertGating::sigmoid ? 1 : 0;
    r.norm = moe.weights_norm ? 1 : 0;
    r.scale = float(moe.weights_scale);
    return r;
}

MoeRouter::MoeRouter(const model::MoeParams& moe)
    : r_(moe_route_of(moe)),
      probs_(size_t(moe.n_expert)),
      sel_(size_t(moe.n_expert)),
      group_score_(size_t(moe.n_group > 0 ? moe.n_group : 1)),
      state_(size_t(moe.n_expert)),
      group_state_(size_t(moe.n_group > 0 ? moe.n_group : 1)) {}

float MoeRouter::route(const float* logits, const float* bias, int32_t* chosen, float* weights) {
    return route_token(logits, bias, r_, probs_.data(), sel_.data(), state_.data(), group_score_.data(),
                       group_state_.data(), chosen, weights);
}

}  // namespace strata::exec
