// IQ1_S x Q8_K dot products: one row of n weights (n/256 block_iq1_s) against n activations
// (n/256 block_q8_K). The kernels compute the same integers per superblock (iq1s_block_sums) and
// follow one of two float32 rounding orders, each replicating one of ggml's kernels bit for bit:
//   scalar  ggml_vec_dot_iq1_s_q8_K_generic as GCC compiles it with FMA:
//           sum = fmaf(d_iq1 * d_q8, sumi + sumi1/8, sum) per superblock
//   simd    the scalar kernel's bits (the same float steps, four rows in the lanes of a register),
//           the integers computed with AVX2; the prefill GEMM (quant/gemm/iq1s_gemm.hpp) gives the
//           same bits, so this is the order the CPU backend runs decode and prefill in
//   avx2    ggml's __AVX2__ kernel: eight float32 lane accumulators (lane k holds the integers of
//           weights 32s+4k..32s+4k+3 of every sub-block s), a separate sumi1 accumulator, and
//           ggml's horizontal-sum order; what ggml_mul_mat uses on x86 (kept to reproduce it).
#pragma once

#include <cstdint>

#include "quant/iq/iq1s_block.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::quant {

enum class Iq1sKernel {
    best,    // simd when the CPU has AVX2+FMA+F16C (and $STRATA_CPU != scalar), else scalar
    scalar,
    avx2,    // throws Error(unsupported) on a CPU without it
    simd,    // scalar's bits with AVX2 integer work; throws Error(unsupported) on a CPU without AVX2
};

// The concrete kernel `best` stands for on this machine; checks that an explicit avx2 is usable.
Iq1sKernel resolve_iq1s_kernel(Iq1sKernel kernel);
const char* iq1s_kernel_name(Iq1sKernel kernel);

// The per-superblock integers in the AVX2 kernel's lane order: lane[k] = sum over sub-blocks s of
// (2l_s+1) * sum of grid*q8 over weights 32s+4k .. 32s+4k+3. sum of lane[] == sumi.
struct Iq1sLaneSums {
    int32_t lane[8];
    int32_t sumi1;
};
Iq1sLaneSums iq1s_lane_sums_scalar(const block_iq1_s& x, const block_q8_K& y);
Iq1sLaneSums iq1s_lane_sums_avx2(const block_iq1_s& x, const block_q8_K& y);  // AVX2 CPUs only

// n must be a positive multiple of 256 (not checked here: callers validate shapes once).
float vec_dot_iq1s_q8k_scalar(int64_t n, const block_iq1_s* x, const block_q8_K* y);
float vec_dot_iq1s_q8k_avx2(int64_t n, const block_iq1_s* x, const block_q8_K* y);  // AVX2 CPUs only
// rows consecutive rows (row i starts at x + i * row_stride_blocks) against the same activations,
// in groups of 4 that share their activation loads; out[i] is bit-identical to
// vec_dot_iq1s_q8k_avx2(n, x + i * row_stride_blocks, y). AVX2 CPUs only.
void vec_dot_iq1s_q8k_avx2_rows(int64_t n, const block_iq1_s* x, int64_t row_stride_blocks, int64_t rows,
                                const block_q8_K* y, float* out);

// The scalar kernel's bits (simd order), AVX2 CPUs only; the _rows form as vec_dot_iq1s_q8k_avx2_rows.
float vec_dot_iq1s_q8k_simd(int64_t n, const block_iq1_s* x, const block_q8_K* y);
void vec_dot_iq1s_q8k_simd_rows(int64_t n, const block_iq1_s* x, int64_t row_stride_blocks, int64_t rows,
                                const block_q8_K* y, float* out);

// Checked entry point: throws Error(invalid_argument) unless n is a positive multiple of 256 and
// the pointers are non-null.
float vec_dot_iq1s_q8k(int64_t n, const void* x, const void* y, Iq1sKernel kernel = Iq1sKernel::best);

}  // namespace strata::quant
