#include "q8_0.hpp"

#include <cmath>

#include "quant/half.hpp"

namespace strata::quant {

void quantize_row_q8_0(const float* x, block_q8_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_0; ++b, x += kQK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < kQK8_0; ++j) {
            const float ax = std::fabs(x[j]);
            amax = amax > ax ? amax : ax;  // ggml's MAX(): a NaN propagates
        }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        for (int j = 0; j < kQK8_0; ++j) y[b].qs[j] = int8_t(std::roundf(x[j] * id));
    }
}

void dequantize_row_q8_0(const block_q8_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_0; ++b) {
        const float d = f16_to_f32(x[b].d);
        for (int j = 0; j < kQK8_0; ++j) y[b * kQK8_0 + j] = d * float(x[b].qs[j]);
    }
}

}  // namespace strata::quant
