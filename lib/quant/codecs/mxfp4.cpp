#include "mxfp4.hpp"

#include "q8_0.hpp"

namespace strata::quant {

void decode_row_mxfp4(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_mxfp4*>(blocks);
    for (int64_t i = 0; i < n / kQK_MXFP4; ++i) mxfp4_decode_block(b[i], kMxfp4Values, y + kQK_MXFP4 * i);
}

float vec_dot_mxfp4_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_mxfp4*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK_MXFP4; ++b) {
        int32_t sumi = 0;
        for (int j = 0; j < kQK_MXFP4 / 2; ++j) {
            sumi += int32_t(xb[b].qs[j]) * kMxfp4Values[wb[b].qs[j] & 0x0f];
            sumi += int32_t(xb[b].qs[j + kQK_MXFP4 / 2]) * kMxfp4Values[wb[b].qs[j] >> 4];
        }
        const float d = f16_to_f32(xb[b].d) * mxfp4_half_scale(wb[b].e);
        sum += d * float(sumi);
    }
    return sum;
}

}  // namespace strata::quant
