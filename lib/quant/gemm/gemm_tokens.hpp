// Multi-token dot products ("GEMM micro-kernels"): a few weight rows against a few activation
// rows at once, each weight block unpacked once into registers and applied to every token, each
// activation block loaded once for every row.
//
// Contract: y[t * y_stride + r] is bit for bit what best_vec_dot(traits)(n, row r, token t)
// returns on this CPU (the AVX2 kernels of lib/quant/*_dot_avx2.cpp): the same integers per block
// and, per (row, token), the same float32 operations in the same order (one accumulator chain per
// (row, token), the same horizontal sum). So a matmul gives each output the same value whatever
// the number of tokens in the call or how the caller groups rows and tokens.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/type_traits.hpp"

namespace strata::quant {

// n weights per row (a positive multiple of the type's block size; not checked), n_rows rows at
// w, w + w_row_bytes, ... (1 <= n_rows <= max_rows), n_tok activation rows in the type's
// dot_type at x, x + x_row_bytes, ... (1 <= n_tok <= max_tokens). Writes y[t * y_stride + r].
using MultiDotFn = void (*)(int64_t n, const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tok, float* y, int64_t y_stride);

// Upper bounds of every kernel's max_rows / max_tokens (for callers' fixed-size buffers).
inline constexpr int kMultiDotMaxRows = 8;
inline constexpr int kMultiDotMaxTokens = 8;

struct MultiDot {
    MultiDotFn fn = nullptr;  // null: the type has no multi-token kernel on this CPU
    int max_rows = 0;         // the register block: calls take 1..max_rows rows
    int max_tokens = 0;       // and 1..max_tokens tokens
};

// The instruction sets the kernels are compiled for. Both give the same results (each equals the
// AVX2 single dot); avx512 (AVX-512 F/BW/VL/DQ/VNNI, 256-bit vectors, VNNI integer dots, 32
// registers for larger register blocks) is picked where the CPU has it.
enum class MultiDotIsa { best, avx2, avx512 };

// The multi-token kernel equal to best_vec_dot(traits, scalar) bit for bit, or {} when there is
// none: a type without one, a CPU without AVX2 (best_vec_dot then picks the scalar kernel), or
// scalar / $STRATA_CPU=scalar; also {} for an explicit isa this CPU lacks (tests, benchmarks).
// Callers fall back to best_vec_dot per (row, token).
MultiDot find_multi_dot(const TypeTraits& traits, bool scalar = false, MultiDotIsa isa = MultiDotIsa::best);

// The kernels, one file per family and instruction set (gemm_tokens_<family>_avx2.cpp, *_avx512.cpp;
// call only on CPUs with those instructions): each takes n_rows <= the max_rows and n_tok <= the
// max_tokens that find_multi_dot reports for its type.
#define STRATA_GT_DECLARE(name)                                                                                \
    void name(int64_t n, const void* w, size_t w_row_bytes, int n_rows, const void* x, size_t x_row_bytes, int n_tok, \
              float* y, int64_t y_stride)
STRATA_GT_DECLARE(multi_dot_q8_0_avx2);
STRATA_GT_DECLARE(multi_dot_q4_0_avx2);
STRATA_GT_DECLARE(multi_dot_q4_1_avx2);
STRATA_GT_DECLARE(multi_dot_q5_0_avx2);
STRATA_GT_DECLARE(multi_dot_q5_1_avx2);
STRATA_GT_DECLARE(multi_dot_q4_K_avx2);
STRATA_GT_DECLARE(multi_dot_q5_K_avx2);
STRATA_GT_DECLARE(multi_dot_q6_K_avx2);
STRATA_GT_DECLARE(multi_dot_iq4_xs_avx2);
STRATA_GT_DECLARE(multi_dot_q8_0_avx512);
STRATA_GT_DECLARE(multi_dot_q4_0_avx512);
STRATA_GT_DECLARE(multi_dot_q4_1_avx512);
STRATA_GT_DECLARE(multi_dot_q5_0_avx512);
STRATA_GT_DECLARE(multi_dot_q5_1_avx512);
STRATA_GT_DECLARE(multi_dot_q4_K_avx512);
STRATA_GT_DECLARE(multi_dot_q5_K_avx512);
STRATA_GT_DECLARE(multi_dot_q6_K_avx512);
STRATA_GT_DECLARE(multi_dot_iq4_xs_avx512);
#undef STRATA_GT_DECLARE

// Register blocks (rows x tokens) of the kernels, what find_multi_dot reports. K-quants and IQ4_XS
// unpack much per weight block and little per activation block: many tokens per row.
inline constexpr int kLegacyMultiRows = 2, kLegacyMultiTokens = 4;
inline constexpr int kKQuantMultiRows = 1, kKQuantMultiTokens = 8;
inline constexpr int kIq4MultiRows = 2, kIq4MultiTokens = 4;
inline constexpr int kLegacyMulti512Rows = 4, kLegacyMulti512Tokens = 4;
inline constexpr int kKQuantMulti512Rows = 2, kKQuantMulti512Tokens = 8;
inline constexpr int kIq4Multi512Rows = 4, kIq4Multi512Tokens = 4;

}  // namespace strata::quant
