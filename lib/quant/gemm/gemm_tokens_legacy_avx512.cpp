// AVX-512 multi-token dots of the 32-weight formats: Q8_0, Q4_0, Q5_0 x Q8_0 and Q4_1, Q5_1 x
// Q8_1 (this file alone is compiled with AVX-512 F/BW/VL/DQ/VNNI; called only after run-time
// detection). The kernels: gemm_tokens_legacy.inc, on 256-bit vectors as the AVX2 single dots
// (the same float lanes), with VNNI forming the integers and 32 registers a larger block.
// Only intrinsics and this file's own functions are used (see legacy_dot_avx2.cpp for why).
#if defined(__x86_64__)

#include <immintrin.h>

#include <array>
#include <cstring>
#include <utility>

#include "gemm_tokens.hpp"
#include "quant/codecs/legacy_quants.hpp"
#include "quant/codecs/q8_0.hpp"

#define STRATA_GT_ROWS kLegacyMulti512Rows
#define STRATA_GT_TOKENS kLegacyMulti512Tokens

namespace strata::quant {

namespace {
#include "gemm_tokens_legacy.inc"
}  // namespace

void multi_dot_q8_0_avx512(int64_t n, const void* w, size_t wrb, int n_rows, const void* x, size_t xrb, int n_tok,
                          float* y, int64_t ys) {
    multi_dot<Q8_0Ops>(n, w, wrb, n_rows, x, xrb, n_tok, y, ys);
}
void multi_dot_q4_0_avx512(int64_t n, const void* w, size_t wrb, int n_rows, const void* x, size_t xrb, int n_tok,
                          float* y, int64_t ys) {
    multi_dot<QOffsetOps<block_q4_0, 8, false>>(n, w, wrb, n_rows, x, xrb, n_tok, y, ys);
}
void multi_dot_q5_0_avx512(int64_t n, const void* w, size_t wrb, int n_rows, const void* x, size_t xrb, int n_tok,
                          float* y, int64_t ys) {
    multi_dot<QOffsetOps<block_q5_0, 16, true>>(n, w, wrb, n_rows, x, xrb, n_tok, y, ys);
}
void multi_dot_q4_1_avx512(int64_t n, const void* w, size_t wrb, int n_rows, const void* x, size_t xrb, int n_tok,
                          float* y, int64_t ys) {
    multi_dot<QMinOps<block_q4_1, false>>(n, w, wrb, n_rows, x, xrb, n_tok, y, ys);
}
void multi_dot_q5_1_avx512(int64_t n, const void* w, size_t wrb, int n_rows, const void* x, size_t xrb, int n_tok,
                          float* y, int64_t ys) {
    multi_dot<QMinOps<block_q5_1, true>>(n, w, wrb, n_rows, x, xrb, n_tok, y, ys);
}

}  // namespace strata::quant

#endif  // __x86_64__
