// AVX2 multi-token IQ4_XS x Q8_K dot (this file alone is compiled with -mavx2 -mfma -mf16c;
// called only after run-time detection). The kernel: gemm_tokens_iq4.inc.
// Only intrinsics and this file's own functions are used (see iq4_dot_avx2.cpp for why).
#if defined(__x86_64__)

#include <immintrin.h>

#include <array>
#include <utility>

#include "gemm_tokens.hpp"
#include "quant/iq/iq4_xs.hpp"
#include "quant/codecs/q8_k.hpp"

#define STRATA_GT_ROWS kIq4MultiRows
#define STRATA_GT_TOKENS kIq4MultiTokens

namespace strata::quant {

namespace {
#include "gemm_tokens_iq4.inc"
}  // namespace

void multi_dot_iq4_xs_avx2(int64_t n, const void* w, size_t wrb, int n_rows, const void* x, size_t xrb, int n_tok,
                         float* y, int64_t ys) {
    kTable[size_t((n_rows - 1) * kT + (n_tok - 1))](n / kQK_K, static_cast<const uint8_t*>(w), wrb,
                                                     static_cast<const uint8_t*>(x), xrb, y, ys);
}

}  // namespace strata::quant

#endif  // __x86_64__
