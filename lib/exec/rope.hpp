// Rotary position embedding for the llama family, with linear and YaRN scaling as llama.cpp
// defines them (ggml rope_yarn): for pair index i (i0 = 2i < n_rot)
//   theta_extrap = pos * freq_base^(-i0 / n_rot),  theta_interp = theta_extrap / factor
//   yarn: theta = mix(theta_interp, theta_extrap, ramp(i0) * ext_factor),
//         mscale = attn_factor * (1 + 0.1 ln factor); otherwise theta = theta_interp, mscale = attn_factor
//   x' = (x0 cos - x1 sin, x0 sin + x1 cos) * mscale on the pair (normal: adjacent, neox: halves).
// Angles are computed in double (more accurate than ggml's float recurrence at large positions).
#pragma once

#include <cstdint>
#include <vector>

#include "model/hparams.hpp"

namespace strata::exec {

class Rope {
public:
    explicit Rope(const model::Hparams& hp);
    // Fills cos/sin (n_rot/2 each, mscale included) for one position.
    void angles(int64_t pos, float* cos_out, float* sin_out) const;
    // Rotates one head of head_dim values in place.
    void apply(float* head, const float* cos_v, const float* sin_v) const;
    int64_t n_pairs() const { return n_rot_ / 2; }

private:
    model::RopeOrder order_;
    int64_t n_rot_;
    double freq_scale_;
    double ext_factor_;
    double mscale_;
    double corr_low_ = 0, corr_high_ = 0;
    std::vector<double> inv_freq_;  // freq_base^(-i0 / n_rot) per pair
};

}  // namespace strata::exec
