#include "quant/k_quants.hpp"

#include "quant/half.hpp"

namespace strata::quant {

namespace {

// Scale and offset of sub-block s, as ggml computes them: d * scale and dmin * min in float32.
struct SubScale {
    float mul, sub;
};
SubScale sub_scale(float d, float dmin, const uint8_t* scales, int s) {
    const KScaleMin sm = k_scale_min(scales, s);
    return {d * float(sm.scale), dmin * float(sm.min)};
}

}  // namespace

void dequantize_row_q4_K(const block_q4_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
        const uint8_t* q = x[b].qs;
        for (int k = 0; k < 4; ++k, q += 32, y += 64) {  // 64 weights: sub-blocks 2k and 2k+1
            const SubScale lo = sub_scale(d, dmin, x[b].scales, 2 * k);
            const SubScale hi = sub_scale(d, dmin, x[b].scales, 2 * k + 1);
            for (int l = 0; l < 32; ++l) {
                y[l] = lo.mul * float(q[l] & 0x0f) - lo.sub;
                y[l + 32] = hi.mul * float(q[l] >> 4) - hi.sub;
            }
        }
    }
}

void dequantize_row_q5_K(const block_q5_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
        const uint8_t* q = x[b].qs;
        const uint8_t* qh = x[b].qh;
        for (int k = 0; k < 4; ++k, q += 32, y += 64) {
            const SubScale lo = sub_scale(d, dmin, x[b].scales, 2 * k);
            const SubScale hi = sub_scale(d, dmin, x[b].scales, 2 * k + 1);
            for (int l = 0; l < 32; ++l) {
                const int q_lo = (q[l] & 0x0f) | (((qh[l] >> (2 * k)) & 1) << 4);
                const int q_hi = (q[l] >> 4) | (((qh[l] >> (2 * k + 1)) & 1) << 4);
                y[l] = lo.mul * float(q_lo) - lo.sub;
                y[l + 32] = hi.mul * float(q_hi) - hi.sub;
            }
        }
    }
}

void dequantize_row_q6_K(const block_q6_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const float d = f16_to_f32(x[b].d);
        for (int h = 0; h < 2; ++h, y += 128) {
            const uint8_t* ql = x[b].ql + 64 * h;
            const uint8_t* qh = x[b].qh + 32 * h;
            const int8_t* sc = x[b].scales + 8 * h;
            for (int l = 0; l < 32; ++l) {
                const int s = l / 16;  // the 16-weight sub-block within each 32-weight quarter
                const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = (d * float(sc[s])) * float(q1);
                y[l + 32] = (d * float(sc[s + 2])) * float(q2);
                y[l + 64] = (d * float(sc[s + 4])) * float(q3);
                y[l + 96] = (d * float(sc[s + 6])) * float(q4);
            }
        }
    }
}

}  // namespace strata::quant
