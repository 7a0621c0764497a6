#include "exec/cpu_backend.hpp"

#include <algorithm>
#include <string>

#include "quant/convert.hpp"
#include "quant/gemv.hpp"
#include "quant/half.hpp"
#include "quant/q8_0.hpp"
#include "quant/q8_k.hpp"
#include "quant/type_ids.hpp"
#include "util/error.hpp"
#include "util/thread_pool.hpp"

namespace strata::exec {

namespace {

// Rows per inner tile: the tile's weights stay in cache while every token of the batch uses them.
constexpr int64_t kRowTile = 16;

// ggml's q8_0 x q8_0 arithmetic: an exact integer sum per block, scaled by both block scales.
float dot_q8_0(const quant::block_q8_0* w, const quant::block_q8_0* x, int64_t n_blocks) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n_blocks; ++b) {
        int32_t s = 0;
        for (int j = 0; j < quant::kQK8_0; ++j) s += int32_t(w[b].qs[j]) * int32_t(x[b].qs[j]);
        sum += float(s) * (quant::f16_to_f32(w[b].d) * quant::f16_to_f32(x[b].d));
    }
    return sum;
}

}  // namespace

CpuBackend::CpuBackend(int n_threads, quant::Iq1sKernel kernel)
    : pool_(std::make_unique<util::ThreadPool>(n_threads > 0 ? n_threads : 0)),
      kernel_(quant::resolve_iq1s_kernel(kernel)) {}

CpuBackend::~CpuBackend() = default;

int CpuBackend::n_threads() const { return pool_->size(); }

bool CpuBackend::supports(uint32_t t) {
    return t == quant::kTypeF32 || t == quant::kTypeF16 || t == quant::kTypeBF16 || t == quant::kTypeQ8_0 ||
           t == quant::kTypeIQ1_S;
}

void CpuBackend::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    pool_->parallel_for(n, fn);
}

uint64_t CpuBackend::matmul_scratch_bytes(int64_t n_tokens, int64_t max_cols) const {
    return matmul_scratch_bytes_for(pool_->size(), n_tokens, max_cols);
}

uint64_t CpuBackend::matmul_scratch_bytes_for(int n_threads, int64_t n_tokens, int64_t max_cols) {
    // Q8_K activations are the largest per value (292 bytes per 256); F16/BF16 need one f32 row
    // per thread.
    const uint64_t q8k = uint64_t(n_tokens) * uint64_t((max_cols + 255) / 256) * sizeof(quant::block_q8_K);
    const uint64_t rows = uint64_t(n_threads) * uint64_t(max_cols) * sizeof(float);
    return q8k + rows;
}

void CpuBackend::matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y) {
    if (!w.present() || !x || !y || n_tokens < 0)
        fail(Status::invalid_argument, "matmul: null buffer or negative token count for '" + w.name + "'");
    if (n_tokens == 0 || w.rows == 0) return;
    const int64_t rows = w.rows, cols = w.cols;
    const bool avx2 = kernel_ == quant::Iq1sKernel::avx2;
    auto dot_f32 = [avx2](const float* a, const float* b, int64_t n) {
        return avx2 ? quant::dot_f32_avx2(a, b, n) : quant::dot_f32_scalar(a, b, n);
    };

    switch (w.type) {
    case quant::kTypeIQ1_S: {
        const int64_t nb = cols / quant::kQK_K;
        xq_.resize(size_t(n_tokens * nb) * sizeof(quant::block_q8_K));
        auto* xq = reinterpret_cast<quant::block_q8_K*>(xq_.data());
        for (int64_t t = 0; t < n_tokens; ++t) quant::quantize_row_q8_k(x + t * cols, xq + t * nb, cols);
        const auto* wb = reinterpret_cast<const quant::block_iq1_s*>(w.data);
        pool_->parallel_for(rows, [&](int64_t begin, int64_t end) {
            for (int64_t r0 = begin; r0 < end; r0 += kRowTile) {
                const int64_t r1 = std::min(end, r0 + kRowTile);
                for (int64_t t = 0; t < n_tokens; ++t) {
                    float* yt = y + t * rows;
#if defined(__x86_64__)
                    if (avx2) {
                        quant::vec_dot_iq1s_q8k_avx2_rows(cols, wb + r0 * nb, nb, r1 - r0, xq + t * nb, yt + r0);
                        continue;
                    }
#endif
                    for (int64_t r = r0; r < r1; ++r) yt[r] = quant::vec_dot_iq1s_q8k_scalar(cols, wb + r * nb, xq + t * nb);
                }
            }
        });
        return;
    }
    case quant::kTypeQ8_0: {
        const int64_t nb = cols / quant::kQK8_0;
        xq_.resize(size_t(n_tokens * nb) * sizeof(quant::block_q8_0));
        auto* xq = reinterpret_cast<quant::block_q8_0*>(xq_.data());
        for (int64_t t = 0; t < n_tokens; ++t) quant::quantize_row_q8_0(x + t * cols, xq + t * nb, cols);
        const auto* wb = reinterpret_cast<const quant::block_q8_0*>(w.data);
        pool_->parallel_for(rows, [&](int64_t begin, int64_t end) {
            for (int64_t r0 = begin; r0 < end; r0 += kRowTile) {
                const int64_t r1 = std::min(end, r0 + kRowTile);
                for (int64_t t = 0; t < n_tokens; ++t)
                    for (int64_t r = r0; r < r1; ++r) y[t * rows + r] = dot_q8_0(wb + r * nb, xq + t * nb, nb);
            }
        });
        return;
    }
    case quant::kTypeF32: {
        const auto* wf = reinterpret_cast<const float*>(w.data);
        pool_->parallel_for(rows, [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r)
                for (int64_t t = 0; t < n_tokens; ++t) y[t * rows + r] = dot_f32(wf + r * cols, x + t * cols, cols);
        });
        return;
    }
    case quant::kTypeF16:
    case quant::kTypeBF16: {
        const bool f16 = w.type == quant::kTypeF16;
        pool_->parallel_for(rows, [&](int64_t begin, int64_t end) {
            std::vector<float> row(static_cast<size_t>(cols));
            for (int64_t r = begin; r < end; ++r) {
                const auto* src = reinterpret_cast<const uint16_t*>(w.row(r));
                if (f16) quant::f16_to_f32_row(src, row.data(), cols);
                else quant::bf16_to_f32_row(src, row.data(), cols);
                for (int64_t t = 0; t < n_tokens; ++t) y[t * rows + r] = dot_f32(row.data(), x + t * cols, cols);
            }
        });
        return;
    }
    default:
        fail(Status::unsupported, "matmul: tensor '" + w.name + "' has a type the CPU backend does not support (ggml type " +
                                      std::to_string(w.type) + ")");
    }
}

}  // namespace strata::exec
