// quantize_row_q8_k on AVX-512 CPUs (this file alone is compiled with AVX-512): the same
// arithmetic as the portable loop in q8_k.cpp, sixteen values at a time, so every block is
// bit-identical to it (prefill quantizes every token's activations before each product).
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#include "q8_k.hpp"

namespace strata::quant {

void quantize_row_q8_k_avx512(const float* x, block_q8_K* y, int64_t n) {
    const __m512 sign_off = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        block_q8_K& out = y[b];
        // The largest magnitude (a NaN never wins: max_ps returns its second operand then), and
        // the first value that has it, as the portable loop's strict comparison picks.
        __m512 amax16 = _mm512_setzero_ps();
        for (int j = 0; j < kQK_K; j += 16)
            amax16 = _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(x + j), sign_off), amax16);
        const float amax = _mm512_reduce_max_ps(amax16);
        if (!(amax > 0.0f)) {
            out.d = 0.0f;
            std::memset(out.qs, 0, sizeof out.qs);
            std::memset(out.bsums, 0, sizeof out.bsums);
            continue;
        }
        float max = 0.0f;
        const __m512 target = _mm512_set1_ps(amax);
        for (int j = 0; j < kQK_K; j += 16) {
            const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(x + j), sign_off), target, _CMP_EQ_OQ);
            if (hit) {
                max = x[j + __builtin_ctz(hit)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m512 scale = _mm512_set1_ps(iscale);
        // Round half to even as ggml's nearest_int: add 1.5 * 2^23, keep the low mantissa bits.
        const __m512 magic = _mm512_set1_ps(12582912.0f);
        const __m512i mant = _mm512_set1_epi32(0x007fffff), half = _mm512_set1_epi32(0x00400000);
        const __m512i top = _mm512_set1_epi32(127);
        for (int j = 0; j < kQK_K; j += 16) {
            const __m512 v = _mm512_add_ps(_mm512_mul_ps(scale, _mm512_loadu_ps(x + j)), magic);
            const __m512i q = _mm512_min_epi32(_mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(v), mant), half), top);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out.qs + j), _mm512_cvtepi32_epi8(q));
            out.bsums[j / 16] = int16_t(_mm512_reduce_add_epi32(q));
        }
        out.d = 1.0f / iscale;
    }
}

}  // namespace strata::quant

#endif  // __x86_64__
