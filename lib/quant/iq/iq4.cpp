// IQ4_XS rows (decode, the portable IQ4_XS x Q8_K dot, the quantizer) and the portable
// IQ4_NL x Q8_0 dot. The scalar dots are the references the AVX2 kernels are tested against.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "iq4_xs.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant/codecs/quantizer_input.hpp"
#include "util/error.hpp"

namespace strata::quant {

void decode_row_iq4_xs(const void* blocks, float* y, int64_t n) {
    const auto* x = static_cast<const block_iq4_xs*>(blocks);
    for (int64_t b = 0; b < n / kQK_K; ++b) iq4xs_decode_block(x[b], kIq4nlValues, y + b * kQK_K);
}

float vec_dot_iq4_xs_q8_K(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_iq4_xs*>(w);
    const auto* xb = static_cast<const block_q8_K*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const float d4d8 = f16_to_f32(wb[b].d) * xb[b].d;
        for (int s = 0; s < kQK_K / kIq4xsSubBlock; ++s) {
            const float dl = d4d8 * float(iq4xs_sub_scale(wb[b], s));
            const int32_t sumi = iq4xs_sub_sum(wb[b], kIq4nlValues, s, xb[b].qs + 32 * s);
            sum = std::fma(dl, float(sumi), sum);
        }
    }
    return sum;
}

float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_iq4_nl*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK4_NL; ++b) {
        const float d = f16_to_f32(xb[b].d) * f16_to_f32(wb[b].d);
        int32_t sumi = 0;
        for (int j = 0; j < kQK4_NL; ++j) sumi += int32_t(kIq4nlValues[iq4_code(wb[b].qs, j)]) * xb[b].qs[j];
        sum = std::fma(d, float(sumi), sum);
    }
    return sum;
}

// ---- Quantizer ---------------------------------------------------------------------------------

namespace {

constexpr int kSubs = kQK_K / kIq4xsSubBlock;
constexpr int kScaleTries = 7;     // ggml's ntry: scales (v0 + t) / max for t in -7..7 are tried
constexpr float kZeroEps = 1e-15f;  // ggml's GROUP_MAX_EPS, applied to the normalised block
constexpr float kHalfMax = 65504.0f;

// Index of the codebook value nearest to v, ties to the upper value (as ggml's best_index_int8).
// The midpoints between consecutive (integer) values are multiples of 1/2, so every half-unit
// cell [c/2 - 128, c/2 - 127.5) of the codebook's range has one answer: a table lookup instead of
// ggml's branchy binary search (which made the quantizer 3x slower).
struct CodeCells {
    uint8_t code[2 * 256];
};
constexpr CodeCells make_code_cells() {
    CodeCells t{};
    for (int c = 0; c < 2 * 256; ++c) {
        const int twice = c - 256;  // 2 * (cell start)
        int code = 0;
        for (int k = 0; k < 15; ++k)
            if (twice >= kIq4nlValues[k] + kIq4nlValues[k + 1]) code = k + 1;  // at or above midpoint k
        t.code[c] = uint8_t(code);
    }
    return t;
}
constexpr CodeCells kCodeCells = make_code_cells();

int nearest_code(float v) {
    const float twice = 2.0f * v;
    if (!(twice > -256.0f)) return 0;  // NaN too (unreachable for finite input)
    if (twice >= 255.0f) return 15;
    return kCodeCells.code[int(std::floor(twice)) + 256];
}

int nearest_int(float v) { return int(std::nearbyint(v)); }

// Codes for xb at inverse scale id, and the weighted least-squares scale they imply
// (sumqx / sumq2) with its score sumqx^2 / sumq2 (larger is better).
struct Fit {
    float scale = 0, score = -FLT_MAX;
};
Fit fit_at(const float* xb, const float* w, float id) {
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < kIq4xsSubBlock; ++j) {
        const float q = kIq4nlValues[nearest_code(id * xb[j])];
        sumqx += w[j] * q * xb[j];
        sumq2 += w[j] * q * q;
    }
    Fit f;
    if (sumq2 > 0) {
        f.scale = sumqx / sumq2;
        f.score = f.scale * sumqx;
    }
    return f;
}

// ggml's per-sub-block search: start from d = max / 127 (the largest magnitude on the codebook's
// -127 end), then try the 15 inverse scales (t - 127) / max, keeping the best least-squares fit.
float sub_block_scale(const float* xb, const float* w, float max) {
    Fit best = fit_at(xb, w, 1 / (-max / kIq4nlValues[0]));
    for (int t = -kScaleTries; t <= kScaleTries; ++t) {
        const Fit f = fit_at(xb, w, (float(t) + kIq4nlValues[0]) / max);
        if (f.score > best.score) best = f;
    }
    return best.scale;
}

float weighted_error(const float* xb, const float* w, float dl, uint8_t* codes) {
    const float idl = dl != 0 ? 1 / dl : 0.0f;
    float err = 0;
    for (int j = 0; j < kIq4xsSubBlock; ++j) {
        codes[j] = uint8_t(nearest_code(idl * xb[j]));
        const float diff = xb[j] - dl * kIq4nlValues[codes[j]];
        err += w[j] * diff * diff;
    }
    return err;
}

void quantize_block(const float* xin, const float* qw, block_iq4_xs& out) {
    out = block_iq4_xs{};
    // Work on x * 2^-e with max |x| in [0.5, 1): scaling by a power of two changes neither the
    // weighted optimum nor (barring underflow) any rounding, and keeps every sum finite.
    float amax = 0;
    for (int i = 0; i < kQK_K; ++i) amax = std::max(amax, std::fabs(xin[i]));
    if (amax == 0) return;  // d = 0: every weight decodes to zero
    const int e = std::ilogb(amax) + 1;
    float x[kQK_K], w[kQK_K];
    float sumx2 = 0;
    for (int i = 0; i < kQK_K; ++i) {
        x[i] = std::ldexp(xin[i], -e);
        sumx2 += x[i] * x[i];
    }
    const float sigma2 = 2 * sumx2 / kQK_K;
    for (int i = 0; i < kQK_K; ++i) w[i] = (qw ? qw[i] : 1.0f) * std::sqrt(sigma2 + x[i] * x[i]);

    float scales[kSubs];
    float max_scale = 0;  // the sub-block scale of largest magnitude, signed
    for (int s = 0; s < kSubs; ++s) {
        const float* xb = x + kIq4xsSubBlock * s;
        float sub_amax = 0, max = 0;
        for (int j = 0; j < kIq4xsSubBlock; ++j)
            if (std::fabs(xb[j]) > sub_amax) {
                sub_amax = std::fabs(xb[j]);
                max = xb[j];
            }
        scales[s] = sub_amax < kZeroEps ? 0.0f : sub_block_scale(xb, w + kIq4xsSubBlock * s, max);
        if (std::fabs(scales[s]) > std::fabs(max_scale)) max_scale = scales[s];
    }
    if (max_scale == 0) return;

    // d maps the largest scale to code -32 (the end with one more step), as ggml does; the codes
    // are chosen against the binary16 value actually stored.
    const double full_d = std::ldexp(double(-max_scale / 32), e);
    const float stored = float(std::clamp(full_d, double(-kHalfMax), double(kHalfMax)));
    out.d = f32_to_f16(stored);
    const float d = float(std::ldexp(double(f16_to_f32(out.d)), -e));
    if (d == 0) {  // below binary16's range: nothing representable but zero
        out.d = 0;
        return;
    }
    for (int s = 0; s < kSubs; ++s) {
        const float* xb = x + kIq4xsSubBlock * s;
        const float* wb = w + kIq4xsSubBlock * s;
        const int nearest = std::clamp(nearest_int(std::clamp(scales[s] / d, -64.0f, 64.0f)), -32, 31);
        // ggml keeps the nearest code; trying its neighbours as well costs 2 x 32 lookups and
        // never increases the weighted error.
        int best_l = nearest;
        float best_err = FLT_MAX;
        uint8_t codes[kIq4xsSubBlock], best_codes[kIq4xsSubBlock] = {};
        for (int l = std::max(-32, nearest - 1); l <= std::min(31, nearest + 1); ++l) {
            const float err = weighted_error(xb, wb, d * float(l), codes);
            if (err < best_err) {
                best_err = err;
                best_l = l;
                std::copy(codes, codes + kIq4xsSubBlock, best_codes);
            }
        }
        const int code6 = best_l + 32;
        out.scales_l[s / 2] = uint8_t(out.scales_l[s / 2] | (code6 & 0x0f) << (4 * (s % 2)));
        out.scales_h = uint16_t(out.scales_h | (code6 >> 4) << (2 * s));
        for (int j = 0; j < 16; ++j) out.qs[16 * s + j] = uint8_t(best_codes[j] | best_codes[j + 16] << 4);
    }
}


}  // namespace

void quantize_row_iq4_xs(const float* x, void* y, int64_t n, const float* imatrix) {
    check_quantizer_input("IQ4_XS quantizer", x, y, n, imatrix);
    auto* out = static_cast<block_iq4_xs*>(y);
    for (int64_t b = 0; b < n / kQK_K; ++b)
        quantize_block(x + b * kQK_K, imatrix ? imatrix + b * kQK_K : nullptr, out[b]);
}

}  // namespace strata::quant
