// MoE routing of one token (deepseek2.md, "MoE"): gating (softmax or sigmoid) of the router
// logits, the selection bias, grouped top-k, then the weights of the chosen experts (normalized
// and scaled as the metadata says). Pure host code with no allocation per call beyond the
// caller's workspace, so that it can be tested alone and mirrored on the GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "model/hparams.hpp"

namespace strata::exec {

struct RouteWorkspace {
    std::vector<float> probs, sel, group_score;
    std::vector<int32_t> order;
    std::vector<uint8_t> eligible;
};

// logits: n_expert router outputs; bias: n_expert selection biases or null. Writes the
// n_expert_used chosen experts in descending selection score (ties: the lower index) and their
// weights. Returns the routing margin (deepseek2.md): how far the choice is from changing.
float route_token(const float* logits, const float* bias, const model::MoeParams& moe, RouteWorkspace& ws,
                  int32_t* chosen, float* weights);

}  // namespace strata::exec
