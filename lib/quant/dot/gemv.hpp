// Matrix-vector products y = W x for decode (batch 1): W row-major [rows x cols], x and y float32.
// IQ1_S quantizes x to Q8_K once and runs the IQ1_S x Q8_K dot per row, reading every weight byte
// once and never materializing dequantized weights. Rows are split over a ThreadPool; each row is
// computed by exactly the same code whatever the split, so y does not depend on the thread count.
#pragma once

#include <cstdint>

#include "iq1s_dot.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::util {
class ThreadPool;
}

namespace strata::quant {

struct GemvOptions {
    util::ThreadPool* pool = nullptr;      // nullptr: the calling thread only
    Iq1sKernel kernel = Iq1sKernel::best;  // scalar also selects the scalar F32 dot
};

// w: rows * cols/256 block_iq1_s. Throws Error(invalid_argument) for cols not a positive multiple
// of 256, rows < 0 or null buffers.
void gemv_iq1s(const void* w, int64_t rows, int64_t cols, const float* x, float* y, const GemvOptions& options = {});

// Same with x already quantized (cols/256 block_q8_K), e.g. shared by several matrices.
void gemv_iq1s_q8k(const void* w, int64_t rows, int64_t cols, const block_q8_K* xq, float* y,
                   const GemvOptions& options = {});

// Plain float32 GEMV (reference point for the benchmark; any cols > 0).
void gemv_f32(const float* w, int64_t rows, int64_t cols, const float* x, float* y, const GemvOptions& options = {});

// Float32 dot products used by gemv_f32: scalar (sequential) and AVX2+FMA (eight-lane; AVX2 CPUs only).
float dot_f32_scalar(const float* a, const float* b, int64_t n);
float dot_f32_avx2(const float* a, const float* b, int64_t n);

}  // namespace strata::quant
