#include "ternary.hpp"

#include "q8_k.hpp"

namespace strata::quant {

namespace {

// Integer dot of 256 int8 pairs (a loop the compiler vectorizes).
int32_t dot256(const int8_t* a, const int8_t* b) {
    int32_t sum = 0;
    for (int j = 0; j < kQK_K; ++j) sum += int32_t(a[j]) * b[j];
    return sum;
}

}  // namespace

void decode_row_tq1_0(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_tq1_0*>(blocks);
    for (int64_t i = 0; i < n / kQK_K; ++i) tq1_0_decode_block(b[i], y + kQK_K * i);
}

void decode_row_tq2_0(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_tq2_0*>(blocks);
    for (int64_t i = 0; i < n / kQK_K; ++i) tq2_0_decode_block(b[i], y + kQK_K * i);
}

float vec_dot_tq1_0_q8_K(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_tq1_0*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        int8_t v[kQK_K];
        tq1_0_values(wb[b], v);
        sum += float(dot256(v, xb[b].qs)) * (f16_to_f32(wb[b].d) * xb[b].d);
    }
    return sum;
}

float vec_dot_tq2_0_q8_K(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_tq2_0*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        int8_t v[kQK_K];
        tq2_0_values(wb[b], v);
        sum += float(dot256(v, xb[b].qs)) * (xb[b].d * f16_to_f32(wb[b].d));
    }
    return sum;
}

}  // namespace strata::quant
