// The IQ1_S quantizer (importance-weighted), producing block_iq1_s as ggml writes it.
//
// The algorithm follows ggml's quantize_row_iq1_s_impl and, in float32 arithmetic order, reproduces
// its bytes (see tests/unit/quant/test_iq1s_quantize.cpp): per 32-weight sub-block an exhaustive search of
// ternary splits of the sorted values under both shifts (+-1/8), snapping of each group of eight to
// the nearest IQ1_S grid entry (neighbour lists of the ternary points that are not on the grid), then
// the superblock scale d = 1.125 * max sub-block scale / 15 and 3-bit sub-block codes.
//
// Importance: element i of a 256-weight superblock is weighted by
//   imatrix[i] * sqrt(sigma2 + x[i]^2),  sigma2 = 2 * sum(x^2) / 256 over the superblock.
// Without an imatrix (nullptr) every imatrix[i] is taken as 1 ("uniform weights"); ggml refuses
// that case, strata accepts it and says so in Iq1sQuantizeReport::used_imatrix.
//
// Deterministic: the bytes depend only on the inputs (not on the thread count or on quantizing
// row by row versus all at once). Departures from ggml, only where ggml yields Inf/NaN:
//   - a superblock whose d would overflow binary16 stores the largest finite half (65504) instead;
//   - a superblock whose sum of squares overflows float32 is fitted on a copy scaled by
//     2^-e so that every value is below 1 (uniform scaling does not change the weighted optimum).
// Non-finite inputs, and non-finite or negative imatrix entries, are rejected.
#pragma once

#include <cstdint>

namespace strata::quant {

struct Iq1sQuantizeReport {
    bool used_imatrix = false;   // false: uniform importance weights were used (no imatrix given)
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t blocks = 0;          // rows * cols / 256 superblocks written
    int64_t zero_blocks = 0;     // superblocks written with d == 0 (all |x| < 1e-12)
    int64_t off_grid_groups = 0; // groups of 8 whose best ternary pattern was not a grid entry
    int64_t clamped_blocks = 0;  // superblocks whose d was clamped to the largest finite half
};

// Quantizes n floats (n a positive multiple of 256) into n/256 block_iq1_s at dst.
// imatrix: one importance weight per element (length n), or nullptr for uniform weights.
// Throws strata::Error(Status::invalid_argument) on a bad n, null x/dst, or non-finite values.
void quantize_row_iq1s(const float* x, void* dst, int64_t n, const float* imatrix);

// Quantizes a row-major [rows x cols] matrix (cols a multiple of 256) into rows * cols/256 blocks.
// imatrix has length cols and is shared by all rows (nullptr: uniform weights). Rows are split into
// contiguous ranges over n_threads threads (<= 1: the calling thread only); the bytes do not depend
// on n_threads.
Iq1sQuantizeReport quantize_iq1s(const float* x, void* dst, int64_t rows, int64_t cols,
                                 const float* imatrix, int n_threads = 1);

}  // namespace strata::quant
