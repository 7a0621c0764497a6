// Q4_K, Q5_K, Q6_K quantizers: float rows to blocks the way ggml's ggml-quants.c makes them, so
// that a file strata-mkmodel writes from float weights holds what llama-quantize would write.
//   no imatrix:   quantize_row_<type>_ref (Q4_K/Q5_K: per 32 weights a weighted least-squares
//                 fit of scale and min over a sweep of 21/16 trial scales; Q6_K: per 16 weights a
//                 signed fit over 19 trial scales), then the sub-block scales quantized to 6 or
//                 8 bits against the block's largest one;
//   with imatrix: quantize_<type> with quant_weights (finer sweep, importance-weighted errors,
//                 and the 6-bit sub-block scales fitted as well instead of just rounded).
// Every float operation is written in ggml's order and built without contraction, so the bytes
// equal ggml's (x86 build, checked on random rows; see the report of issue 15).
#include <cmath>
#include <cstring>

#include "k_quants.hpp"

namespace strata::quant {

namespace {

constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS: below it a group is all zero

// Round half to even for |v| < 2^22, the way ggml's nearest_int does it, independent of the
// rounding mode (larger |v| give the same wrapped value ggml gets).
int nearest_int(float v) {
    const float shifted = v + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

// Which of ggml's two unsigned scale+min fits a sub-block gets (make_qkx2_quants: null
// imatrix; make_qkx3_quants: with one, where an out-of-range trial code is clamped before
// rounding and a null weight array means x^2).
enum class MinFit { ref, weighted };

struct FitSweep {
    float rmin, rdelta;
    int nstep;
};

// Fits x[i] ~ scale * L[i] - the_min with L in 0..nmax (weights w, never null here), minimizing
// the weighted squared error over a sweep of trial inverse scales (rmin + rdelta * k + nmax) /
// (max - min). Returns scale; *the_min >= 0.
float fit_scale_min(MinFit kind, int n, int nmax, const float* x, const float* w, uint8_t* L, float* the_min,
                    FitSweep sweep) {
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (kind == MinFit::ref ? max == min : max <= min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.0f;
    }
    float iscale = float(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = uint8_t(clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax));
        const float diff = scale * float(L[i]) + min - x[i];
        best_error += w[i] * (diff * diff);
    }
    uint8_t trial[32];
    for (int k = 0; k <= sweep.nstep; ++k) {
        iscale = (sweep.rmin + sweep.rdelta * float(k) + float(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l;
            if (kind == MinFit::ref) {
                l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
            } else {
                // min may sit at or near max here, so v can be huge: clamp before rounding.
                const float v = iscale * (x[i] - min);
                l = v > 0 ? nearest_int(v < float(nmax) ? v : float(nmax)) : 0;
            }
            trial[i] = uint8_t(l);
            sum_l += w[i] * float(l);
            sum_l2 += w[i] * float(l) * float(l);
            sum_xl += w[i] * float(l) * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (det > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float error = 0;
            for (int i = 0; i < n; ++i) {
                const float diff = this_scale * float(trial[i]) + this_min - x[i];
                error += w[i] * (diff * diff);
            }
            if (error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = trial[i];
                best_error = error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// ggml's make_qp_quants: the 6-bit codes L (0..nmax) of n non-negative values x (the
// sub-block scales or mins) against one scale, weighted by w; returns that scale.
float fit_positive_codes(int n, int nmax, const float* x, uint8_t* L, const float* w) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = max > x[i] ? max : x[i];
    if (max < kGroupMaxEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    float iscale = float(nmax) / max;
    for (int i = 0; i < n; ++i) L[i] = uint8_t(nearest_int(iscale * x[i]));
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * float(L[i]);
        best_mse += w[i] * diff * diff;
    }
    for (int k = -4; k <= 4; ++k) {
        if (k == 0) continue;
        const float iscale_k = (0.1f * float(k) + float(nmax)) / max;
        const float scale_k = 1 / iscale_k;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            const int l = nearest_int(iscale_k * x[i]);
            const float diff = x[i] - scale_k * float(l < nmax ? l : nmax);
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_k;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = l < nmax ? l : nmax;
        L[i] = uint8_t(l);
        sumlx += w[i] * x[i] * float(l);
        suml2 += w[i] * float(l) * float(l);
    }
    // Coordinate descent: move one code at a time while that improves the fit.
    for (int pass = 0; pass < 5; ++pass) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            float slx = sumlx - w[i] * x[i] * float(L[i]);
            float sl2 = suml2 - w[i] * float(L[i]) * float(L[i]);
            if (slx > 0 && sl2 > 0) {
                int l = nearest_int(x[i] * sl2 / slx);
                l = l < nmax ? l : nmax;
                if (l != L[i]) {
                    slx += w[i] * x[i] * float(l);
                    sl2 += w[i] * float(l) * float(l);
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = uint8_t(l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++changed;
                    }
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// ggml's make_qx_quants with rmse_type 1: signed codes L = q + nmax (q in -nmax..nmax-1) of n
// values, weights qw (null: x^2), best of 19 trial scales by weighted least squares.
float fit_signed(int n, int nmax, const float* x, int8_t* L, const float* qw) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    auto weight = [&](int i) { return qw ? qw[i] : x[i] * x[i]; };
    float iscale = float(-nmax) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = int8_t(l + nmax);
        sumlx += weight(i) * x[i] * float(l);
        suml2 += weight(i) * float(l) * float(l);
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int k = -9; k <= 9; ++k) {
        if (k == 0) continue;
        iscale = -(float(nmax) + 0.1f * float(k)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            sumlx += weight(i) * x[i] * float(l);
            suml2 += weight(i) * float(l) * float(l);
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// Packs eight 6-bit scales and mins into the k_scale_min layout. Codes above 63 (only possible
// for degenerate fits, as in ggml) spill into neighbouring bits exactly as ggml's packing does.
void pack_scales_mins(const uint8_t* ls, const uint8_t* lm, uint8_t* packed) {
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            packed[j] = ls[j];
            packed[j + 4] = lm[j];
        } else {
            packed[j + 4] = uint8_t((ls[j] & 0x0f) | ((lm[j] & 0x0f) << 4));
            packed[j - 4] = uint8_t(packed[j - 4] | ((ls[j] >> 4) << 6));
            packed[j] = uint8_t(packed[j] | ((lm[j] >> 4) << 6));
        }
    }
}

// The final codes of a Q4_K/Q5_K block (0..nmax) from its stored scales: round (x + m) / (d sc).
// A sub-block whose d * sc is zero keeps the codes of its fit.
void requantize_k4(const float* x, const uint8_t* packed, uint16_t d16, uint16_t dmin16, int nmax, uint8_t* L) {
    for (int j = 0; j < 8; ++j) {
        const KScaleMin sm = k_scale_min(packed, j);
        const float d = f16_to_f32(d16) * float(sm.scale);
        if (d == 0) continue;
        const float dm = f16_to_f32(dmin16) * float(sm.min);
        for (int i = 0; i < 32; ++i) L[32 * j + i] = uint8_t(clamp_int(nearest_int((x[32 * j + i] + dm) / d), 0, nmax));
    }
}

// The 6-bit sub-block scales and mins of a Q4_K/Q5_K block and its d, dmin, the fitted codes in
// L. nmax is 15 (Q4_K) or 31 (Q5_K); clamp_codes is ggml's MIN(63, ...) on fitted scale codes
// (its Q5_K does it, its Q4_K does not).
void fit_k4_block(const float* x, const float* imatrix, int nmax, bool clamp_codes, uint8_t* packed, uint16_t* d16,
                  uint16_t* dmin16, uint8_t* L) {
    float scales[8], mins[8], weights[32];
    uint8_t ls[8], lm[8];
    std::memset(packed, 0, kKScaleBytes);
    if (!imatrix) {
        const FitSweep sweep = nmax == 15 ? FitSweep{-1.0f, 0.1f, 20} : FitSweep{-0.5f, 0.1f, 15};
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; ++j) {
            const float* xs = x + 32 * j;
            float sum_x2 = 0;
            for (int i = 0; i < 32; ++i) sum_x2 += xs[i] * xs[i];
            const float av_x = std::sqrt(sum_x2 / 32);
            for (int i = 0; i < 32; ++i) weights[i] = av_x + std::fabs(xs[i]);
            scales[j] = fit_scale_min(MinFit::ref, 32, nmax, xs, weights, L + 32 * j, &mins[j], sweep);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
        const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
        for (int j = 0; j < 8; ++j) {
            const uint8_t s = uint8_t(nearest_int(inv_scale * scales[j]));
            const uint8_t m = uint8_t(nearest_int(inv_min * mins[j]));
            ls[j] = s < 63 ? s : 63;
            lm[j] = m < 63 ? m : 63;
        }
        *d16 = f32_to_f16(max_scale / 63.0f);
        *dmin16 = f32_to_f16(max_min / 63.0f);
    } else {
        float sum_x2 = 0;
        for (int i = 0; i < kQK_K; ++i) sum_x2 += x[i] * x[i];
        const float sigma2 = 2 * sum_x2 / kQK_K;
        float sub_weight[8];
        for (int j = 0; j < 8; ++j) {
            const float* xs = x + 32 * j;
            const float* qw = imatrix + 32 * j;
            for (int i = 0; i < 32; ++i) weights[i] = qw[i] * std::sqrt(sigma2 + xs[i] * xs[i]);
            float sumw = 0;
            for (int i = 0; i < 32; ++i) sumw += weights[i];
            sub_weight[j] = sumw;
            scales[j] =
                fit_scale_min(MinFit::weighted, 32, nmax, xs, weights, L + 32 * j, &mins[j], {-0.9f, 0.05f, 36});
        }
        const float d_block = fit_positive_codes(8, 63, scales, ls, sub_weight);
        const float m_block = fit_positive_codes(8, 63, mins, lm, sub_weight);
        if (clamp_codes)
            for (int j = 0; j < 8; ++j) ls[j] = ls[j] < 63 ? ls[j] : 63, lm[j] = lm[j] < 63 ? lm[j] : 63;
        *d16 = f32_to_f16(d_block);
        *dmin16 = f32_to_f16(m_block);
    }
    pack_scales_mins(ls, lm, packed);
    requantize_k4(x, packed, *d16, *dmin16, nmax, L);
}

void quantize_block_q4_K(const float* x, const float* imatrix, block_q4_K& y) {
    uint8_t L[kQK_K];
    fit_k4_block(x, imatrix, 15, false, y.scales, &y.d, &y.dmin, L);
    for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l) y.qs[32 * k + l] = uint8_t(L[64 * k + l] | (L[64 * k + 32 + l] << 4));
}

void quantize_block_q5_K(const float* x, const float* imatrix, block_q5_K& y) {
    uint8_t L[kQK_K];
    fit_k4_block(x, imatrix, 31, imatrix != nullptr, y.scales, &y.d, &y.dmin, L);
    std::memset(y.qh, 0, sizeof y.qh);
    for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l) {
            const int lo = L[64 * k + l], hi = L[64 * k + 32 + l];
            y.qs[32 * k + l] = uint8_t((lo & 0x0f) | ((hi & 0x0f) << 4));
            y.qh[l] = uint8_t(y.qh[l] | ((lo >> 4) << (2 * k)) | ((hi >> 4) << (2 * k + 1)));
        }
}

void quantize_block_q6_K(const float* x, const float* imatrix, block_q6_K& y) {
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int s = 0; s < 16; ++s) {
        scales[s] = fit_signed(16, 32, x + 16 * s, L + 16 * s, imatrix ? imatrix + 16 * s : nullptr);
        if (std::fabs(scales[s]) > max_abs_scale) {
            max_abs_scale = std::fabs(scales[s]);
            max_scale = scales[s];
        }
    }
    if (max_abs_scale < kGroupMaxEps) {
        std::memset(&y, 0, sizeof y);
        return;
    }
    const float iscale = -128.0f / max_scale;
    y.d = f32_to_f16(1 / iscale);
    for (int s = 0; s < 16; ++s) {
        const int v = nearest_int(iscale * scales[s]);
        y.scales[s] = int8_t(v < 127 ? v : 127);
    }
    for (int s = 0; s < 16; ++s) {
        const float d = f16_to_f32(y.d) * float(y.scales[s]);
        if (d == 0) continue;  // keeps the codes of the fit, as ggml does
        for (int i = 0; i < 16; ++i) L[16 * s + i] = int8_t(clamp_int(nearest_int(x[16 * s + i] / d), -32, 31) + 32);
    }
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
            const int8_t* q = L + 128 * h;
            y.ql[64 * h + l] = uint8_t((q[l] & 0x0f) | ((q[l + 64] & 0x0f) << 4));
            y.ql[64 * h + 32 + l] = uint8_t((q[l + 32] & 0x0f) | ((q[l + 96] & 0x0f) << 4));
            y.qh[32 * h + l] =
                uint8_t((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
        }
}

template <typename Block, void (*QuantizeBlock)(const float*, const float*, Block&)>
void quantize_row(const float* x, void* y, int64_t n, const float* imatrix) {
    auto* out = static_cast<Block*>(y);
    for (int64_t b = 0; b < n / kQK_K; ++b)
        QuantizeBlock(x + b * kQK_K, imatrix ? imatrix + b * kQK_K : nullptr, out[b]);
}

}  // namespace

void quantize_row_q4_K(const float* x, void* y, int64_t n, const float* imatrix) {
    quantize_row<block_q4_K, quantize_block_q4_K>(x, y, n, imatrix);
}

void quantize_row_q5_K(const float* x, void* y, int64_t n, const float* imatrix) {
    quantize_row<block_q5_K, quantize_block_q5_K>(x, y, n, imatrix);
}

void quantize_row_q6_K(const float* x, void* y, int64_t n, const float* imatrix) {
    quantize_row<block_q6_K, quantize_block_q6_K>(x, y, n, imatrix);
}

}  // namespace strata::quant
