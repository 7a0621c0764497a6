// AVX2 multi-token K-quant x Q8_K dots: Q4_K, Q5_K, Q6_K (this file alone is compiled with
// -mavx2 -mfma -mf16c; called only after run-time detection). The kernels: gemm_tokens_kquants.inc.
// Only intrinsics and this file's own functions are used (see k_quants_dot_avx2.cpp for why).
#if defined(__x86_64__)

#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <utility>

#include "gemm_tokens.hpp"
#include "quant/codecs/k_quants.hpp"
#include "quant/codecs/q8_k.hpp"

#define STRATA_GT_ROWS kKQuantMultiRows
#define STRATA_GT_TOKENS kKQuantMultiTokens

namespace strata::quant {

namespace {
#include "gemm_tokens_kquants.inc"
}  // namespace

void multi_dot_q4_K_avx2(int64_t n, const void* w, size_t wrb, int n_rows, const void* x, size_t xrb, int n_tok,
                         float* y, int64_t ys) {
    multi_dot<Q4K>(n, w, wrb, n_rows, x, xrb, n_tok, y, ys);
}
void multi_dot_q5_K_avx2(int64_t n, const void* w, size_t wrb, int n_rows, const void* x, size_t xrb, int n_tok,
                         float* y, int64_t ys) {
    multi_dot<Q5K>(n, w, wrb, n_rows, x, xrb, n_tok, y, ys);
}
void multi_dot_q6_K_avx2(int64_t n, const void* w, size_t wrb, int n_rows, const void* x, size_t xrb, int n_tok,
                         float* y, int64_t ys) {
    multi_dot<Q6K>(n, w, wrb, n_rows, x, xrb, n_tok, y, ys);
}

}  // namespace strata::quant

#endif  // __x86_64__
