#include "gemv.hpp"

#include <string>
#include <vector>

#include "util/error.hpp"
#include "util/thread_pool.hpp"

namespace strata::quant {

namespace {

void check_shape(const void* w, int64_t rows, int64_t cols, const void* x, const float* y, int64_t block) {
    if (rows < 0 || cols <= 0 || cols % block != 0)
        fail(Status::invalid_argument, "gemv: bad shape " + std::to_string(rows) + " x " + std::to_string(cols) +
                                           " (cols must be a positive multiple of " + std::to_string(block) + ")");
    if (rows > 0 && (!w || !x || !y)) fail(Status::invalid_argument, "gemv: null buffer");
}

template <typename Fn>
void for_rows(int64_t rows, const GemvOptions& options, const Fn& fn) {
    if (options.pool) {
        options.pool->parallel_for(rows, [&](int64_t begin, int64_t end) { fn(begin, end); });
    } else {
        fn(0, rows);
    }
}

}  // namespace

void gemv_iq1s_q8k(const void* w, int64_t rows, int64_t cols, const block_q8_K* xq, float* y,
                   const GemvOptions& options) {
    check_shape(w, rows, cols, xq, y, kQK_K);
    const Iq1sKernel kernel = resolve_iq1s_kernel(options.kernel);
    const auto* wb = static_cast<const block_iq1_s*>(w);
    const int64_t blocks_per_row = cols / kQK_K;
    for_rows(rows, options, [&](int64_t begin, int64_t end) {
#if defined(__x86_64__)
        if (kernel == Iq1sKernel::avx2) {
            vec_dot_iq1s_q8k_avx2_rows(cols, wb + begin * blocks_per_row, blocks_per_row, end - begin, xq, y + begin);
            return;
        }
        if (kernel == Iq1sKernel::simd) {
            vec_dot_iq1s_q8k_simd_rows(cols, wb + begin * blocks_per_row, blocks_per_row, end - begin, xq, y + begin);
            return;
        }
#endif
        for (int64_t r = begin; r < end; ++r) y[r] = vec_dot_iq1s_q8k_scalar(cols, wb + r * blocks_per_row, xq);
    });
}

void gemv_iq1s(const void* w, int64_t rows, int64_t cols, const float* x, float* y, const GemvOptions& options) {
    check_shape(w, rows, cols, x, y, kQK_K);
    std::vector<block_q8_K> xq(size_t(cols / kQK_K));
    quantize_row_q8_k(x, xq.data(), cols);
    gemv_iq1s_q8k(w, rows, cols, xq.data(), y, options);
}

void gemv_f32(const float* w, int64_t rows, int64_t cols, const float* x, float* y, const GemvOptions& options) {
    check_shape(w, rows, cols, x, y, 1);
    const bool avx2 = resolve_iq1s_kernel(options.kernel) != Iq1sKernel::scalar;
    for_rows(rows, options, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            y[r] = avx2 ? dot_f32_avx2(w + r * cols, x, cols) : dot_f32_scalar(w + r * cols, x, cols);
    });
}

float dot_f32_scalar(const float* a, const float* b, int64_t n) {
    // In double: each product of two floats is exact there and the sums nearly so. One running
    // float32 sum (or eight) was measured ~25x further from a float64 reference than the AVX2
    // kernel's fused lanes on a synthetic model's logits, enough to flip f16 roundings of K/V
    // downstream; the portable path must not be the inaccurate one. Four partial sums let a
    // compiler vectorize the loop where it can.
    double part[4] = {};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; ++k) part[k] += double(a[i + k]) * double(b[i + k]);
    for (int k = 0; i < n; ++i, ++k) part[k] += double(a[i]) * double(b[i]);
    return float((part[0] + part[2]) + (part[1] + part[3]));
}

}  // namespace strata::quant
