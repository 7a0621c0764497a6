#include "iq4_nl.hpp"

namespace strata::quant {

void dequantize_row_iq4_nl(const block_iq4_nl* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK4_NL; ++b) iq4nl_decode_block(x[b], kIq4nlValues, y + b * kQK4_NL);
}

}  // namespace strata::quant
