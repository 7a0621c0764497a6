// Small element-wise operations of the forward pass (host float32).
#pragma once

#include <cstdint>

namespace strata::exec {

// out = x / sqrt(mean(x^2) + eps) * w (sum of squares in double); out may alias x.
void rms_norm(const float* x, const float* w, int64_t n, double eps, float* out);

// gate[i] = silu(gate[i]) * up[i]
void swiglu(float* gate, const float* up, int64_t n);

// x[i] += y[i]
void add_inplace(float* x, const float* y, int64_t n);

// In-place softmax over n scores (max-subtracted, sum in double).
void softmax(float* x, int64_t n);

}  // namespace strata::exec
