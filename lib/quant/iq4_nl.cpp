#include "quant/iq4_nl.hpp"

#include "quant/half.hpp"

namespace strata::quant {

void dequantize_row_iq4_nl(const block_iq4_nl* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK4_NL; ++b, y += kQK4_NL) {
        const float d = f16_to_f32(x[b].d);
        for (int j = 0; j < kQK4_NL / 2; ++j) {
            y[j] = d * float(kIq4nlValues[x[b].qs[j] & 0x0f]);
            y[j + kQK4_NL / 2] = d * float(kIq4nlValues[x[b].qs[j] >> 4]);
        }
    }
}

}  // namespace strata::quant
