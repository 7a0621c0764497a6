#include "quant/type_traits.hpp"

#include <cstring>

#include "quant/convert.hpp"
#include "quant/iq/iq1m_block.hpp"
#include "quant/dot/iq1s_dot.hpp"
#include "quant/iq/iq1s_quantize.hpp"
#include "quant/iq/iq2_block.hpp"
#include "quant/iq/iq3_block.hpp"
#include "quant/iq/iq4_nl.hpp"
#include "quant/iq/iq4_xs.hpp"
#include "quant/codecs/k_quants.hpp"
#include "quant/codecs/legacy_quants.hpp"
#include "quant/codecs/mxfp4.hpp"
#include "quant/codecs/q1_0.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant/codecs/ternary.hpp"
#include "util/cpu_features.hpp"

namespace strata::quant {

namespace {

// Adapters from the typed row functions to the table's untyped signatures.
template <typename Block, void (*Fn)(const Block*, float*, int64_t)>
void decode_as(const void* x, float* y, int64_t n) {
    Fn(static_cast<const Block*>(x), y, n);
}
template <typename Block, void (*Fn)(const float*, Block*, int64_t)>
void quantize_as(const float* x, void* y, int64_t n, const float*) {
    Fn(x, static_cast<Block*>(y), n);
}
void decode_f32(const void* x, float* y, int64_t n) { std::memmove(y, x, size_t(n) * sizeof(float)); }
void quantize_f32(const float* x, void* y, int64_t n, const float*) { std::memmove(y, x, size_t(n) * sizeof(float)); }
void decode_iq1s(const void* x, float* y, int64_t n) {
    const auto* b = static_cast<const block_iq1_s*>(x);
    for (int64_t i = 0; i < n / kQK_K; ++i) iq1s_decode_block(b[i], kIq1sGrid, y + i * kQK_K);
}
void quantize_iq1s_row(const float* x, void* y, int64_t n, const float* imatrix) {
    if (n > 0) quantize_row_iq1s(x, y, n, imatrix);
}
float dot_iq1s_scalar(int64_t n, const void* w, const void* x) {
    return vec_dot_iq1s_q8k_scalar(n, static_cast<const block_iq1_s*>(w), static_cast<const block_q8_K*>(x));
}
#if defined(__x86_64__)
// The simd kernel: the scalar kernel's bits, as the CPU backend's IQ1_S GEMV and GEMM give them.
float dot_iq1s_avx2(int64_t n, const void* w, const void* x) {
    return vec_dot_iq1s_q8k_simd(n, static_cast<const block_iq1_s*>(w), static_cast<const block_q8_K*>(x));
}
#define STRATA_AVX2(fn) fn
#else
#define STRATA_AVX2(fn) nullptr
#endif

constexpr VecDotFn kNoDot = nullptr;

// ggml-cpu's pairing of weight types with activation types (type_traits_cpu[].vec_dot_type).
const TypeTraits kTable[] = {
    {kTypeF32, "f32", 1, 4, kTypeF32, decode_f32, quantize_f32, kNoDot, kNoDot},
    {kTypeF16, "f16", 1, 2, kTypeF32, decode_as<uint16_t, f16_to_f32_row>, quantize_as<uint16_t, f32_to_f16_row>, kNoDot, kNoDot},
    {kTypeQ4_0, "q4_0", 32, sizeof(block_q4_0), kTypeQ8_0, decode_row_q4_0, quantize_row_q4_0, vec_dot_q4_0_q8_0, STRATA_AVX2(vec_dot_q4_0_q8_0_avx2)},
    {kTypeQ4_1, "q4_1", 32, sizeof(block_q4_1), kTypeQ8_1, decode_row_q4_1, quantize_row_q4_1, vec_dot_q4_1_q8_1, STRATA_AVX2(vec_dot_q4_1_q8_1_avx2)},
    {kTypeQ5_0, "q5_0", 32, sizeof(block_q5_0), kTypeQ8_0, decode_row_q5_0, quantize_row_q5_0, vec_dot_q5_0_q8_0, STRATA_AVX2(vec_dot_q5_0_q8_0_avx2)},
    {kTypeQ5_1, "q5_1", 32, sizeof(block_q5_1), kTypeQ8_1, decode_row_q5_1, quantize_row_q5_1, vec_dot_q5_1_q8_1, STRATA_AVX2(vec_dot_q5_1_q8_1_avx2)},
    {kTypeQ8_0, "q8_0", 32, sizeof(block_q8_0), kTypeQ8_0, decode_as<block_q8_0, dequantize_row_q8_0>, quantize_as<block_q8_0, quantize_row_q8_0>, vec_dot_q8_0_q8_0, STRATA_AVX2(vec_dot_q8_0_q8_0_avx2)},
    {kTypeQ8_1, "q8_1", 32, sizeof(block_q8_1), kTypeQ8_1, decode_row_q8_1, quantize_as<block_q8_1, quantize_row_q8_1>, kNoDot, kNoDot},
    {kTypeQ2_K, "q2_K", 256, sizeof(block_q2_K), kTypeQ8_K, decode_row_q2_K, nullptr, vec_dot_q2_K_q8_K, STRATA_AVX2(vec_dot_q2_K_q8_K_avx2)},
    {kTypeQ3_K, "q3_K", 256, sizeof(block_q3_K), kTypeQ8_K, decode_row_q3_K, nullptr, vec_dot_q3_K_q8_K, STRATA_AVX2(vec_dot_q3_K_q8_K_avx2)},
    {kTypeQ4_K, "q4_K", 256, sizeof(block_q4_K), kTypeQ8_K, decode_as<block_q4_K, dequantize_row_q4_K>, quantize_row_q4_K, vec_dot_q4_K_q8_K, STRATA_AVX2(vec_dot_q4_K_q8_K_avx2)},
    {kTypeQ5_K, "q5_K", 256, sizeof(block_q5_K), kTypeQ8_K, decode_as<block_q5_K, dequantize_row_q5_K>, quantize_row_q5_K, vec_dot_q5_K_q8_K, STRATA_AVX2(vec_dot_q5_K_q8_K_avx2)},
    {kTypeQ6_K, "q6_K", 256, sizeof(block_q6_K), kTypeQ8_K, decode_as<block_q6_K, dequantize_row_q6_K>, quantize_row_q6_K, vec_dot_q6_K_q8_K, STRATA_AVX2(vec_dot_q6_K_q8_K_avx2)},
    {kTypeQ8_K, "q8_K", 256, sizeof(block_q8_K), kTypeQ8_K, decode_as<block_q8_K, dequantize_row_q8_k>, quantize_as<block_q8_K, quantize_row_q8_k>, kNoDot, kNoDot},
    {kTypeIQ2_XXS, "iq2_xxs", 256, sizeof(block_iq2_xxs), kTypeQ8_K, decode_row_iq2_xxs, nullptr, vec_dot_iq2_xxs_q8_K, STRATA_AVX2(vec_dot_iq2_xxs_q8_K_avx2)},
    {kTypeIQ2_XS, "iq2_xs", 256, sizeof(block_iq2_xs), kTypeQ8_K, decode_row_iq2_xs, nullptr, vec_dot_iq2_xs_q8_K, STRATA_AVX2(vec_dot_iq2_xs_q8_K_avx2)},
    {kTypeIQ3_XXS, "iq3_xxs", 256, sizeof(block_iq3_xxs), kTypeQ8_K, decode_row_iq3_xxs, nullptr, vec_dot_iq3_xxs_q8_K, STRATA_AVX2(vec_dot_iq3_xxs_q8_K_avx2)},
    {kTypeIQ1_S, "iq1_s", 256, sizeof(block_iq1_s), kTypeQ8_K, decode_iq1s, quantize_iq1s_row, dot_iq1s_scalar, STRATA_AVX2(dot_iq1s_avx2)},
    {kTypeIQ4_NL, "iq4_nl", 32, sizeof(block_iq4_nl), kTypeQ8_0, decode_as<block_iq4_nl, dequantize_row_iq4_nl>, nullptr, vec_dot_iq4_nl_q8_0, STRATA_AVX2(vec_dot_iq4_nl_q8_0_avx2)},
    {kTypeIQ3_S, "iq3_s", 256, sizeof(block_iq3_s), kTypeQ8_K, decode_row_iq3_s, nullptr, vec_dot_iq3_s_q8_K, STRATA_AVX2(vec_dot_iq3_s_q8_K_avx2)},
    {kTypeIQ2_S, "iq2_s", 256, sizeof(block_iq2_s), kTypeQ8_K, decode_row_iq2_s, nullptr, vec_dot_iq2_s_q8_K, STRATA_AVX2(vec_dot_iq2_s_q8_K_avx2)},
    {kTypeIQ4_XS, "iq4_xs", 256, sizeof(block_iq4_xs), kTypeQ8_K, decode_row_iq4_xs, quantize_row_iq4_xs, vec_dot_iq4_xs_q8_K, STRATA_AVX2(vec_dot_iq4_xs_q8_K_avx2)},
    {kTypeIQ1_M, "iq1_m", 256, sizeof(block_iq1_m), kTypeQ8_K, decode_row_iq1_m, quantize_row_iq1_m, vec_dot_iq1_m_q8_K, STRATA_AVX2(vec_dot_iq1_m_q8_K_avx2)},
    {kTypeBF16, "bf16", 1, 2, kTypeF32, decode_as<uint16_t, bf16_to_f32_row>, quantize_as<uint16_t, f32_to_bf16_row>, kNoDot, kNoDot},
    {kTypeTQ1_0, "tq1_0", 256, sizeof(block_tq1_0), kTypeQ8_K, decode_row_tq1_0, nullptr, vec_dot_tq1_0_q8_K, kNoDot},
    {kTypeTQ2_0, "tq2_0", 256, sizeof(block_tq2_0), kTypeQ8_K, decode_row_tq2_0, nullptr, vec_dot_tq2_0_q8_K, kNoDot},
    {kTypeMXFP4, "mxfp4", 32, sizeof(block_mxfp4), kTypeQ8_0, decode_row_mxfp4, nullptr, vec_dot_mxfp4_q8_0, STRATA_AVX2(vec_dot_mxfp4_q8_0_avx2)},
    {kTypeQ1_0, "q1_0", 128, sizeof(block_q1_0), kTypeQ8_0, decode_row_q1_0, nullptr, vec_dot_q1_0_q8_0, kNoDot},
};

}  // namespace

const TypeTraits* find_type_traits(uint32_t ggml_type) {
    for (const TypeTraits& t : kTable)
        if (t.id == ggml_type) return &t;
    return nullptr;
}

std::string supported_type_names() {
    std::string out;
    for (const TypeTraits& t : kTable) out += (out.empty() ? "" : ", ") + std::string(t.name);
    return out;
}

VecDotFn best_vec_dot(const TypeTraits& traits, bool scalar) {
    static const bool avx2 = util::has_avx2_kernels();  // cpu_features() honours STRATA_CPU=scalar
    if (!scalar && avx2 && traits.dot_avx2) return traits.dot_avx2;
    return traits.dot_scalar;
}

}  // namespace strata::quant
