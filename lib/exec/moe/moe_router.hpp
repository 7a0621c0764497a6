// The CPU side of MoE routing: the settings from the model's hyperparameters and a workspace
// for route_token (moe_route.hpp, shared with device code).
#pragma once

#include <cstdint>
#include <vector>

#include "moe_route.hpp"
#include "model/hparams.hpp"

namespace strata::exec {

MoeRoute moe_route_of(const model::MoeParams& moe);

class MoeRouter {
public:
    explicit MoeRouter(const model::MoeParams& moe);
    // Routes one token: chosen/weights hold n_expert_used entries. Returns the routing margin.
    float route(const float* logits, const float* bias, int32_t* chosen, float* weights);
    const MoeRoute& settings() const { return r_; }

private:
    MoeRoute r_;
    std::vector<float> probs_, sel_, group_score_;
    std::vector<uint8_t> state_, group_state_;
};

}  // namespace strata::exec
