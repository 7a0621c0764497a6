#include "q8_k.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "util/cpu_features.hpp"

namespace strata::quant {

namespace {

// Round half to even for |v| < 2^22, the way ggml's nearest_int does it (add 1.5 * 2^23 and take
// the low mantissa bits), independent of the current rounding mode.
int nearest_int(float v) {
    const float shifted = v + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace

#if defined(__x86_64__)
void quantize_row_q8_k_avx512(const float* x, block_q8_K* y, int64_t n);  // q8_k_avx512.cpp
#endif

void quantize_row_q8_k(const float* x, block_q8_K* y, int64_t n) {
#if defined(__x86_64__)
    if (util::has_avx512_vnni_kernels()) return quantize_row_q8_k_avx512(x, y, n);
#endif
    quantize_row_q8_k_portable(x, y, n);
}

void quantize_row_q8_k_portable(const float* x, block_q8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        block_q8_K& out = y[b];
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < kQK_K; ++j) {
            const float ax = std::fabs(x[j]);
            if (ax > amax) {  // strict: the first of equal magnitudes wins, as in ggml
                amax = ax;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            out.d = 0.0f;
            std::memset(out.qs, 0, sizeof out.qs);
            std::memset(out.bsums, 0, sizeof out.bsums);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < kQK_K; ++j) out.qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
        for (int i = 0; i < kQK_K / 16; ++i) {
            int sum = 0;
            for (int j = 0; j < 16; ++j) sum += out.qs[16 * i + j];
            out.bsums[i] = int16_t(sum);
        }
        out.d = 1.0f / iscale;
    }
}

void dequantize_row_q8_k(const block_q8_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b)
        for (int j = 0; j < kQK_K; ++j) y[b * kQK_K + j] = x[b].d * float(x[b].qs[j]);
}

}  // namespace strata::quant
