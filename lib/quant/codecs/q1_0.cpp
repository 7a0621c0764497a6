#include "q1_0.hpp"

#include <cstring>

#include "legacy_quants.hpp"  // kBitsToBytes
#include "q8_0.hpp"

namespace strata::quant {

void decode_row_q1_0(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_q1_0*>(blocks);
    for (int64_t i = 0; i < n / kQK1_0; ++i) q1_0_decode_block(b[i], y + kQK1_0 * i);
}

float vec_dot_q1_0_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q1_0*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK1_0; ++b) {
        float block_sum = 0.0f;
        for (int k = 0; k < kQK1_0 / kQK8_0; ++k) {
            const block_q8_0& y = xb[4 * b + k];
            const uint8_t* bits = wb[b].qs + 4 * k;
            // sum of +-x = 2 * (sum of x over set bits) - sum of x; the bits expand to 0/1 bytes
            // eight at a time (in registers), then vectorizable int8 loops.
            const uint64_t set[4] = {kBitsToBytes[bits[0]], kBitsToBytes[bits[1]], kBitsToBytes[bits[2]], kBitsToBytes[bits[3]]};
            int8_t on[kQK8_0];
            std::memcpy(on, set, sizeof on);
            int32_t sum_on = 0, sum_all = 0;
            for (int j = 0; j < kQK8_0; ++j) {
                sum_on += int32_t(on[j]) * y.qs[j];
                sum_all += y.qs[j];
            }
            const int32_t sumi = 2 * sum_on - sum_all;
            block_sum += f16_to_f32(y.d) * float(sumi);
        }
        sum += f16_to_f32(wb[b].d) * block_sum;
    }
    return sum;
}

}  // namespace strata::quant
