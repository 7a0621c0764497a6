#include "exec/rope.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace strata::exec {

namespace {

// The dimension index at which a wavelength makes n_rot_beta rotations over the original context.
double yarn_corr_dim(double n_dims, double n_ctx_orig, double n_rot_beta, double base) {
    return n_dims * std::log(n_ctx_orig / (n_rot_beta * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}

}  // namespace

Rope::Rope(const model::Hparams& hp) : order_(hp.arch.rope_order), n_rot_(hp.rope.n_rot) {
    const model::RopeParams& r = hp.rope;
    freq_scale_ = 1.0 / r.factor;  // 1 when the file sets no factor (see model/hparams.cpp)
    ext_factor_ = r.scaling == model::RopeScaling::yarn ? r.ext_factor : 0.0;
    mscale_ = r.attn_factor;
    if (ext_factor_ != 0.0) {
        mscale_ *= 1.0 + 0.1 * std::log(1.0 / freq_scale_);
        const double n = double(n_rot_), orig = double(r.n_ctx_orig);
        corr_low_ = std::max(0.0, std::floor(yarn_corr_dim(n, orig, r.beta_fast, r.freq_base)));
        corr_high_ = std::min(n - 1.0, std::ceil(yarn_corr_dim(n, orig, r.beta_slow, r.freq_base)));
    }
    if (r.unit_magnitude) mscale_ = 1.0;  // deepseek2: the temperature is in the attention scale
    inv_freq_.resize(size_t(n_rot_ / 2));
    for (int64_t i = 0; i < n_rot_ / 2; ++i) inv_freq_[size_t(i)] = std::pow(r.freq_base, -double(2 * i) / double(n_rot_));
}

void Rope::angles(int64_t pos, float* cos_out, float* sin_out) const {
    for (int64_t i = 0; i < n_rot_ / 2; ++i) {
        const double extrap = double(pos) * inv_freq_[size_t(i)];
        double theta = freq_scale_ * extrap;
        if (ext_factor_ != 0.0) {
            // ggml's ramp over the pair index i0/2 = i: 1 below corr_low, 0 above corr_high.
            const double y = (double(i) - corr_low_) / std::max(0.001, corr_high_ - corr_low_);
            const double mix = (1.0 - std::min(1.0, std::max(0.0, y))) * ext_factor_;
            theta = theta * (1.0 - mix) + extrap * mix;
        }
        cos_out[i] = float(std::cos(theta) * mscale_);
        sin_out[i] = float(std::sin(theta) * mscale_);
    }
}

void Rope::apply(float* x, const float* c, const float* s) const {
    const int64_t half = n_rot_ / 2;
    for (int64_t i = 0; i < half; ++i) {
        const int64_t a = order_ == model::RopeOrder::neox ? i : 2 * i;
        const int64_t b = order_ == model::RopeOrder::neox ? i + half : 2 * i + 1;
        const float x0 = x[a], x1 = x[b];
        x[a] = x0 * c[i] - x1 * s[i];
        x[b] = x0 * s[i] + x1 * c[i];
    }
}

}  // namespace strata::exec
