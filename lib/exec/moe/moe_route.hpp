// MoE routing of one token (deepseek2.md, "MoE"): gating (softmax or sigmoid) of the router
// logits, the selection bias, grouped top-k, then the weights of the chosen experts (normalized
// and scaled as the metadata says). One implementation in STRATA_HD functions over plain arrays,
// so the CPU forward pass and a GPU routing kernel run the same code and the CPU tests cover it.
#pragma once

#include <math.h>
#include <stdint.h>

#include "quant/hd.hpp"

namespace strata::exec {

// The routing settings, plain data (copyable to a device).
struct MoeRoute {
    int32_t n_expert = 0;
    int32_t n_used = 0;
    int32_t n_group = 0;       // grouped top-k when 1 < n_group and n_group_used < n_group
    int32_t n_group_used = 0;
    int32_t sigmoid = 0;       // 1: sigmoid gating; 0: softmax
    int32_t norm = 0;          // divide the chosen weights by their sum
    float scale = 0.0f;        // then multiply them (0: not scaled)
    STRATA_HD bool grouped() const { return n_group > 1 && n_group_used < n_group; }
};

// Index of the largest score among flags[i] == want (ties: the lower index), or -1.
STRATA_HD int32_t route_argmax(const float* score, const uint8_t* flags, uint8_t want, int32_t n) {
    int32_t best = -1;
    for (int32_t i = 0; i < n; ++i)
        if (flags[i] == want && (best < 0 || score[i] > score[best])) best = i;
    return best;
}

// logits: n_expert router outputs; bias: n_expert selection biases or null. Workspace: probs and
// sel (n_expert floats each), state (n_expert bytes), group_score (n_group floats) and
// group_state (n_group bytes). Writes the n_used chosen experts in descending selection score
// (ties: the lower index) and their weights. Returns the routing margin (deepseek2.md): the
// smallest gap by which a choice was made (+inf when nothing was left out).
STRATA_HD float route_token(const float* logits, const float* bias, const MoeRoute& r, float* probs, float* sel,
                            uint8_t* state, float* group_score, uint8_t* group_state, int32_t* chosen, float* weights) {
    const int32_t n = r.n_expert;
    if (r.sigmoid) {
        for (int32_t e = 0; e < n; ++e) probs[e] = 1.0f / (1.0f + expf(-logits[e]));
    } else {
        float mx = logits[0];
        for (int32_t e = 1; e < n; ++e) mx = logits[e] > mx ? logits[e] : mx;
        double sum = 0.0;
        for (int32_t e = 0; e < n; ++e) sum += probs[e] = expf(logits[e] - mx);
        for (int32_t e = 0; e < n; ++e) probs[e] = float(double(probs[e]) / sum);
    }
    for (int32_t e = 0; e < n; ++e) {
        sel[e] = probs[e] + (bias ? bias[e] : 0.0f);
        state[e] = 0;  // 0 eligible, 1 chosen, 2 in a dropped group
    }
    float margin = INFINITY;
    if (r.grouped()) {
        // A group scores the sum of its two best selection scores; only the best groups stay.
        const int32_t size = n / r.n_group;
        for (int32_t g = 0; g < r.n_group; ++g) {
            float a = -INFINITY, b = -INFINITY;
            for (int32_t e = g * size; e < (g + 1) * size; ++e) {
                if (sel[e] > a) { b = a; a = sel[e]; } else if (sel[e] > b) { b = sel[e]; }
            }
            group_score[g] = a + b;
            group_state[g] = 0;
        }
        float last_kept = 0.0f;
        for (int32_t i = 0; i < r.n_group_used; ++i) {
            const int32_t g = route_argmax(group_score, group_state, 0, r.n_group);
            group_state[g] = 1;
            last_kept = group_score[g];
        }
        margin = last_kept - group_score[route_argmax(group_score, group_state, 0, r.n_group)];
        for (int32_t g = 0; g < r.n_group; ++g)
            if (!group_state[g])
                for (int32_t e = g * size; e < (g + 1) * size; ++e) state[e] = 2;
    }
    float last = 0.0f;
    for (int32_t i = 0; i < r.n_used; ++i) {
        const int32_t e = route_argmax(sel, state, 0, n);
        state[e] = 1;
        chosen[i] = e;
        last = sel[e];
    }
    const int32_t left = route_argmax(sel, state, 0, n);  // the best expert left out
    if (left >= 0 && last - sel[left] < margin) margin = last - sel[left];
    double sum = 0.0;
    for (int32_t i = 0; i < r.n_used; ++i) sum += weights[i] = probs[chosen[i]];
    for (int32_t i = 0; i < r.n_used; ++i) {
        if (r.norm) weights[i] = float(double(weights[i]) / sum);
        if (r.scale != 0.0f) weights[i] = weights[i] * r.scale;
    }
    return margin;
}

}  // namespace strata::exec
