#include "exec/moe_route.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace strata::exec {

namespace {

// Indices [0, n) ordered by descending score, ties by ascending index.
void rank(const float* score, int64_t n, std::vector<int32_t>& order) {
    order.resize(size_t(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [score](int32_t a, int32_t b) { return score[a] > score[b]; });
}

}  // namespace

float route_token(const float* logits, const float* bias, const model::MoeParams& moe, RouteWorkspace& ws,
                  int32_t* chosen, float* weights) {
    const int64_t n = moe.n_expert, k = moe.n_expert_used;
    ws.probs.resize(size_t(n));
    ws.sel.resize(size_t(n));
    if (moe.gating == model::ExpertGating::sigmoid) {
        for (int64_t e = 0; e < n; ++e) ws.probs[size_t(e)] = 1.0f / (1.0f + std::exp(-logits[e]));
    } else {
        const float mx = *std::max_element(logits, logits + n);
        double sum = 0.0;
        for (int64_t e = 0; e < n; ++e) sum += ws.probs[size_t(e)] = std::exp(logits[e] - mx);
        for (auto& p : ws.probs) p = float(double(p) / sum);
    }
    for (int64_t e = 0; e < n; ++e) ws.sel[size_t(e)] = ws.probs[size_t(e)] + (bias ? bias[e] : 0.0f);

    float margin = std::numeric_limits<float>::infinity();
    ws.eligible.assign(size_t(n), 1);
    if (moe.grouped()) {
        // A group scores the sum of its two best selection scores; only the best groups stay.
        const int64_t size = n / moe.n_group;
        ws.group_score.resize(size_t(moe.n_group));
        for (int64_t g = 0; g < moe.n_group; ++g) {
            float a = -std::numeric_limits<float>::infinity(), b = a;
            for (int64_t e = g * size; e < (g + 1) * size; ++e) {
                const float s = ws.sel[size_t(e)];
                if (s > a) { b = a; a = s; } else if (s > b) { b = s; }
            }
            ws.group_score[size_t(g)] = a + b;
        }
        rank(ws.group_score.data(), moe.n_group, ws.order);
        for (int64_t i = moe.n_group_used; i < moe.n_group; ++i) {
            const int64_t g = ws.order[size_t(i)];
            std::fill(ws.eligible.begin() + g * size, ws.eligible.begin() + (g + 1) * size, uint8_t(0));
        }
        margin = ws.group_score[size_t(ws.order[size_t(moe.n_group_used - 1)])] -
                 ws.group_score[size_t(ws.order[size_t(moe.n_group_used)])];
    }
    rank(ws.sel.data(), n, ws.order);
    int64_t taken = 0;
    float last = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t e = ws.order[size_t(i)];
        if (!ws.eligible[size_t(e)]) continue;
        if (taken < k) {
            chosen[taken++] = e;
            last = ws.sel[size_t(e)];
        } else {
            margin = std::min(margin, last - ws.sel[size_t(e)]);  // the best expert left out
            break;
        }
    }
    double sum = 0.0;
    for (int64_t i = 0; i < k; ++i) sum += weights[i] = ws.probs[size_t(chosen[i])];
    for (int64_t i = 0; i < k; ++i) {
        if (moe.weights_norm) weights[i] = float(double(weights[i]) / sum);
        if (moe.weights_scale != 0.0) weights[i] = float(double(weights[i]) * moe.weights_scale);
    }
    return margin;
}

}  // namespace strata::exec
