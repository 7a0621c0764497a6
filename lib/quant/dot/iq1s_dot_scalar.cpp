// Portable IQ1_S x Q8_K kernel; the reference the SIMD kernels are tested against.
#include <cmath>

#include "iq1s_dot.hpp"

namespace strata::quant {

Iq1sLaneSums iq1s_lane_sums_scalar(const block_iq1_s& x, const block_q8_K& y) {
    Iq1sLaneSums r{};
    for (int s = 0; s < kQK_K / kIq1sSubBlock; ++s) {
        const int32_t ls = iq1s_sub_scale(x, s);
        for (int g = 0; g < 4; ++g) {
            const uint64_t entry = kIq1sGrid[iq1s_group_index(x, 4 * s + g)];
            for (int j = 0; j < 8; ++j)
                r.lane[(8 * g + j) / 4] += ls * iq1s_grid_value(entry, j) * y.qs[32 * s + 8 * g + j];
        }
    }
    r.sumi1 = iq1s_block_sums(x, kIq1sGrid, y.qs, y.bsums).sumi1;
    return r;
}

float vec_dot_iq1s_q8k_scalar(int64_t n, const block_iq1_s* x, const block_q8_K* y) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const Iq1sBlockSums s = iq1s_block_sums(x[b], kIq1sGrid, y[b].qs, y[b].bsums);
        const float dd = f16_to_f32(x[b].d) * y[b].d;
        // sumi + sumi1/8 is exact in float32; the FMA is what makes this equal ggml's generic kernel.
        sum = std::fma(dd, float(s.sumi) + kIq1sDelta * float(s.sumi1), sum);
    }
    return sum;
}

}  // namespace strata::quant
