// The routed (token, slot) pairs of a micro-batch grouped by expert (deepseek2.md, "MoE"): each
// chosen expert's rows contiguous, experts ascending and tokens ascending within an expert, so
// that every chosen expert runs once over all the tokens that chose it (its weights read once
// per micro-batch); and per token its rows in ascending expert order with their weights, the
// order in which a token's expert outputs are summed whatever the batch (so one-token decode
// reproduces prefill exactly). Shared by the CPU forward pass (context_moe.cpp) and the GPU's
// host routing path (cuda/runtime/gpu_context_moe.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::exec {

struct ExpertGroups {
    std::vector<int64_t> first;      // [n_expert + 1]: expert x's rows are [first[x], first[x + 1])
    std::vector<int32_t> src_token;  // [n * k]: the token each grouped row holds
    std::vector<int32_t> sum_rows;   // [n][k]: token t's rows, ascending expert
    std::vector<float> sum_weights;  // [n][k]: their routing weights, in that order

    // chosen, weights: [n_tokens][k] (each token's k experts distinct, each < n_expert).
    void build(const int32_t* chosen, const float* weights, int64_t n_tokens, int64_t k, int64_t n_expert);
    int64_t rows(int64_t expert) const { return first[size_t(expert) + 1] - first[size_t(expert)]; }
};

}  // namespace strata::exec
