// IQ1_M rows: decoding and the portable IQ1_M x Q8_K dot (the reference the AVX2 kernel is
// tested against).
#include <cmath>

#include "iq1m_block.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::quant {

void decode_row_iq1_m(const void* blocks, float* y, int64_t n) {
    const auto* x = static_cast<const block_iq1_m*>(blocks);
    for (int64_t b = 0; b < n / kQK_K; ++b) iq1m_decode_block(x[b], kIq1sGrid, y + b * kQK_K);
}

float vec_dot_iq1_m_q8_K(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_iq1_m*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const Iq1mBlockSums s = iq1m_block_sums(wb[b], kIq1sGrid, xb[b].qs);
        const float dd = iq1m_d(wb[b]) * xb[b].d;
        // sumi1 + sumi2/8 is exact (see iq1m_block_sums); the FMA is GCC's contraction of ggml's
        // sumf += d * (...), as for IQ1_S.
        sum = std::fma(dd, float(s.sumi1) + kIq1mDelta * float(s.sumi2), sum);
    }
    return sum;
}

}  // namespace strata::quant
