// Error measures that several CUDA test programs hold their results to (host code).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace strata::cuda_test {

// Largest |got - want| / |want|, element by element: an exact 0 wants an exact 0, and a NaN in
// got counts as infinite.
inline double max_rel_error(const std::vector<float>& got, const std::vector<float>& want) {
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(double(got[i]) - double(want[i]));
        const double rel = err == 0.0 ? 0.0 : err / std::fabs(double(want[i]));
        if (std::isnan(rel) || std::isnan(got[i])) return INFINITY;
        worst = std::max(worst, rel);
    }
    return worst;
}

// Largest |got - want| over the largest |want| (for values whose small ones carry no relative
// precision of their own); a non-finite element of got counts as infinitely wrong.
inline double max_error_over_largest(const std::vector<float>& got, const std::vector<float>& want) {
    double err = 0.0, scale = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i])) return INFINITY;
        err = std::max(err, double(std::fabs(got[i] - want[i])));
        scale = std::max(scale, double(std::fabs(want[i])));
    }
    return scale > 0.0 ? err / scale : err;
}

}  // namespace strata::cuda_test
