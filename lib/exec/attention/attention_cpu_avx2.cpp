// The attention kernel on 8-float vectors (compiled with -mavx2 -mfma -mf16c; called only on CPUs
// that have them).
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#include "attention_cpu_impl.hpp"
#include "quant/codecs/q8_0.hpp"

namespace strata::exec::attn::detail {

namespace {

struct Avx2Ops {
    using V = __m256;
    static constexpr int64_t W = 8;
    static V zero() { return _mm256_setzero_ps(); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static V set1(float x) { return _mm256_set1_ps(x); }
    static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static float hsum(V v) {
        __m128 h = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        return _mm_cvtss_f32(h);
    }
    // The four sums of a, b, c, d, each by the same tree: adjacent pairs, then pairs of pairs,
    // then the two 128-bit halves.
    static void hsum4(V a, V b, V c, V d, float* out) {
        const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
        _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
    }
    static float hmax(V v) {
        __m128 h = _mm_max_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        return _mm_cvtss_f32(h);
    }
    static V round(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    static V pow2(V n) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
    }
    static V zero_below(V x, float limit, V v) { return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(limit), _CMP_LT_OQ), v); }
    static V exp(V x) { return exp_nonpositive<Avx2Ops>(x); }
    static float exp1(float x) { return __builtin_expf(x); }

    template <RowType T>
    static V row(const uint8_t* row, int64_t c) {
        if constexpr (T == RowType::f32) {
            return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + c * 8);
        } else if constexpr (T == RowType::f16) {
            return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c * 16)));
        } else {  // 4 chunks per block; d * q is exact in float32 (11 by 8 significant bits)
            // Rows need not be 2-byte aligned (a q8_0 block is 34 bytes): bytes, not the struct.
            const uint8_t* b = row + (c / 4) * int64_t(sizeof(quant::block_q8_0));
            uint16_t d;
            std::memcpy(&d, b, sizeof d);
            const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + sizeof d + (c % 4) * 8));
            const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
            return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(d)), q);
        }
    }
    // The first n (< 8) values of chunk c, zeros after (f32 and f16 rows: q8_0 rows have none).
    template <RowType T>
    static V row_tail(const uint8_t* row, int64_t c, int64_t n) {
        const size_t bytes = T == RowType::f32 ? 4 : 2;
        alignas(32) uint8_t tmp[32] = {};
        std::memcpy(tmp, row + c * 8 * int64_t(bytes), size_t(n) * bytes);
        return Avx2Ops::row<T>(tmp, 0);
    }
};

}  // namespace

const Fns& avx2_fns() { return SegmentKernel<Avx2Ops>::fns; }

}  // namespace strata::exec::attn::detail

#endif  // __x86_64__
