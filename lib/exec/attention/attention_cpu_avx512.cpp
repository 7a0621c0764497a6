// The attention kernel on 16-float vectors (compiled with the AVX-512 flags of *_avx512.cpp
// files; called only where util::has_avx512_vnni_kernels()).
#if defined(__x86_64__)

// GCC 12 reports its own AVX-512 intrinsics (the _mm512_undefined_* behind casts and extracts) as
// "may be used uninitialized"; a false positive, silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "attention_cpu_impl.hpp"
#include "quant/codecs/q8_0.hpp"

namespace strata::exec::attn::detail {

namespace {

struct Avx512Ops {
    using V = __m512;
    static constexpr int64_t W = 16;
    static V zero() { return _mm512_setzero_ps(); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    // Halving trees written out (a fixed order, whatever the compiler's reduce intrinsics do).
    static float hsum(V v) {
        const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
        __m128 x = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        x = _mm_add_ps(x, _mm_movehl_ps(x, x));
        x = _mm_add_ss(x, _mm_movehdup_ps(x));
        return _mm_cvtss_f32(x);
    }
    // The four sums of a, b, c, d, each by the same tree: the 256-bit halves, then adjacent pairs,
    // pairs of pairs, and the two 128-bit halves.
    static void hsum4(V a, V b, V c, V d, float* out) {
        auto half = [](V x) { return _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1)); };
        const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(half(a), half(b)), _mm256_hadd_ps(half(c), half(d)));
        _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
    }
    static float hmax(V v) {
        const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
        __m128 x = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        x = _mm_max_ps(x, _mm_movehl_ps(x, x));
        x = _mm_max_ss(x, _mm_movehdup_ps(x));
        return _mm_cvtss_f32(x);
    }
    static V round(V x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    static V pow2(V n) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
    }
    static V zero_below(V x, float limit, V v) {
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(limit), _CMP_NLT_UQ), v);
    }
    static V exp(V x) { return exp_nonpositive<Avx512Ops>(x); }
    static float exp1(float x) { return __builtin_expf(x); }

    template <RowType T>
    static V row(const uint8_t* row, int64_t c) {
        if constexpr (T == RowType::f32) {
            return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + c * 16);
        } else if constexpr (T == RowType::f16) {
            return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c * 32)));
        } else {  // 2 chunks per block; d * q is exact in float32 (11 by 8 significant bits)
            // Rows need not be 2-byte aligned (a q8_0 block is 34 bytes): bytes, not the struct.
            const uint8_t* b = row + (c / 2) * int64_t(sizeof(quant::block_q8_0));
            uint16_t d;
            std::memcpy(&d, b, sizeof d);
            const __m128i q8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + sizeof d + (c % 2) * 16));
            const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8));
            return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(d)), q);
        }
    }
    // The first n (< 16) values of chunk c, zeros after (f32 and f16 rows: q8_0 rows have none).
    template <RowType T>
    static V row_tail(const uint8_t* row, int64_t c, int64_t n) {
        const __mmask16 m = __mmask16((1u << n) - 1u);
        if constexpr (T == RowType::f32) {
            return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + c * 16);
        } else {
            return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + c * 32));
        }
    }
};

}  // namespace

const Fns& avx512_fns() { return SegmentKernel<Avx512Ops>::fns; }

}  // namespace strata::exec::attn::detail

#endif  // __x86_64__
