// AVX-512 multi-token IQ4_XS x Q8_K dot (this file alone is compiled with AVX-512
// F/BW/VL/DQ/VNNI; called only after run-time detection). The kernel: gemm_tokens_iq4.inc, on
// 256-bit vectors as the AVX2 single dot (the same float lanes), with VNNI's vpdpwssd and 32
// registers for a larger block.
// Only intrinsics and this file's own functions are used (see iq4_dot_avx2.cpp for why).
#if defined(__x86_64__)

#include <immintrin.h>

#include <array>
#include <utility>

#include "gemm_tokens.hpp"
#include "quant/iq/iq4_xs.hpp"
#include "quant/codecs/q8_k.hpp"

#define STRATA_GT_ROWS kIq4Multi512Rows
#define STRATA_GT_TOKENS kIq4Multi512Tokens

namespace strata::quant {

namespace {
#include "gemm_tokens_iq4.inc"
}  // namespace

void multi_dot_iq4_xs_avx512(int64_t n, const void* w, size_t wrb, int n_rows, const void* x, size_t xrb, int n_tok,
                          float* y, int64_t ys) {
    kTable[size_t((n_rows - 1) * kT + (n_tok - 1))](n / kQK_K, static_cast<const uint8_t*>(w), wrb,
                                                     static_cast<const uint8_t*>(x), xrb, y, ys);
}

}  // namespace strata::quant

#endif  // __x86_64__
