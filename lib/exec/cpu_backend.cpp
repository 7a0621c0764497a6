#include "exec/cpu_backend.hpp"

#include <algorithm>
#include <string>

#include "quant/convert.hpp"
#include "quant/formats.hpp"
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

// Types whose rows are dequantized to float32 once per call and dotted with every token (the
// dequantization is ggml's, bit for bit; the dot is dot_f32 on the float row).
bool dequantized_rows(uint32_t t) {
    return t == quant::kTypeF16 || t == quant::kTypeBF16 || t == quant::kTypeIQ4_NL || t == quant::kTypeQ4_K ||
           t == quant::kTypeQ5_K || t == quant::kTypeQ6_K;
}

}  // namespace

CpuBackend::CpuBackend(int n_threads, quant::Iq1sKernel kernel)
    : pool_(std::make_unique<util::ThreadPool>(n_threads > 0 ? n_threads : 0)),
      kernel_(quant::resolve_iq1s_kernel(kernel)) {}

CpuBackend::~CpuBackend() = default;

int CpuBackend::n_threads() const { return pool_->size(); }

bool CpuBackend::supports(uint32_t t) {
    return t == quant::kTypeF32 || t == quant::kTypeF16 || t == quant::kTypeBF16 || t == quant::kTypeQ8_0 ||
           t == quant::kTypeIQ1_S || dequantized_rows(t);
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
    const MatmulJob job{&w, x, n_tokens, y};
    matmul_many({&job, 1});
}

void CpuBackend::matmul_many(std::span<const MatmulJob> jobs) {
    // Check every job, and quantize the activations the integer kernels need (Q8_K for IQ1_S,
    // Q8_0 for Q8_0), each job's at its own offset.
    xq_offset_.assign(jobs.size(), 0);
    size_t xq_bytes = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
        const MatmulJob& job = jobs[j];
        if (!job.w || !job.w->present() || !job.x || !job.y || job.n_tokens < 0)
            fail(Status::invalid_argument,
                 "matmul: null buffer or negative token count for '" + (job.w ? job.w->name : std::string("?")) + "'");
        const WeightView& w = *job.w;
        xq_offset_[j] = xq_bytes;
        if (w.type == quant::kTypeIQ1_S) xq_bytes += size_t(job.n_tokens * (w.cols / quant::kQK_K)) * sizeof(quant::block_q8_K);
        else if (w.type == quant::kTypeQ8_0) xq_bytes += size_t(job.n_tokens * (w.cols / quant::kQK8_0)) * sizeof(quant::block_q8_0);
        else if (!supports(w.type))
            fail(Status::unsupported, "matmul: tensor '" + w.name +
                                          "' has a type the CPU backend does not support (ggml type " + std::to_string(w.type) + ")");
        else if (dequantized_rows(w.type) && w.cols % quant::block_elements(w.type) != 0)  // here, not in a worker
            fail(Status::invalid_argument, "matmul: tensor '" + w.name + "' has rows of " + std::to_string(w.cols) +
                                               " elements, not whole blocks of its type");
    }
    xq_.resize(xq_bytes);
    tiles_.clear();
    for (size_t j = 0; j < jobs.size(); ++j) {
        const MatmulJob& job = jobs[j];
        const WeightView& w = *job.w;
        uint8_t* xq = xq_.data() + xq_offset_[j];
        for (int64_t t = 0; t < job.n_tokens; ++t) {
            if (w.type == quant::kTypeIQ1_S)
                quant::quantize_row_q8_k(job.x + t * w.cols, reinterpret_cast<quant::block_q8_K*>(xq) + t * (w.cols / quant::kQK_K), w.cols);
            else if (w.type == quant::kTypeQ8_0)
                quant::quantize_row_q8_0(job.x + t * w.cols, reinterpret_cast<quant::block_q8_0*>(xq) + t * (w.cols / quant::kQK8_0), w.cols);
        }
        if (job.n_tokens == 0) continue;
        for (int64_t r0 = 0; r0 < w.rows; r0 += kRowTile) tiles_.push_back({int32_t(j), r0, std::min(w.rows, r0 + kRowTile)});
    }
    if (tiles_.empty()) return;

    const bool avx2 = kernel_ == quant::Iq1sKernel::avx2;
    auto dot_f32 = [avx2](const float* a, const float* b, int64_t n) {
        return avx2 ? quant::dot_f32_avx2(a, b, n) : quant::dot_f32_scalar(a, b, n);
    };
    // Rows r0..r1 of one job, for every token: the weights of the tile stay in cache while each
    // token uses them. Every output element is one row-times-token dot by fixed code.
    auto run_tile = [&](const Tile& tile, std::vector<float>& row) {
        const MatmulJob& job = jobs[size_t(tile.job)];
        const WeightView& w = *job.w;
        const int64_t rows = w.rows, cols = w.cols, n_tokens = job.n_tokens;
        const uint8_t* xq = xq_.data() + xq_offset_[size_t(tile.job)];
        float* y = job.y;
        switch (w.type) {
        case quant::kTypeIQ1_S: {
            const int64_t nb = cols / quant::kQK_K;
            const auto* wb = reinterpret_cast<const quant::block_iq1_s*>(w.data);
            const auto* xb = reinterpret_cast<const quant::block_q8_K*>(xq);
            for (int64_t t = 0; t < n_tokens; ++t) {
                float* yt = y + t * rows;
#if defined(__x86_64__)
                if (avx2) {
                    quant::vec_dot_iq1s_q8k_avx2_rows(cols, wb + tile.r0 * nb, nb, tile.r1 - tile.r0, xb + t * nb, yt + tile.r0);
                    continue;
                }
#endif
                for (int64_t r = tile.r0; r < tile.r1; ++r) yt[r] = quant::vec_dot_iq1s_q8k_scalar(cols, wb + r * nb, xb + t * nb);
            }
            return;
        }
        case quant::kTypeQ8_0: {
            const int64_t nb = cols / quant::kQK8_0;
            const auto* wb = reinterpret_cast<const quant::block_q8_0*>(w.data);
            const auto* xb = reinterpret_cast<const quant::block_q8_0*>(xq);
            for (int64_t t = 0; t < n_tokens; ++t)
                for (int64_t r = tile.r0; r < tile.r1; ++r) y[t * rows + r] = dot_q8_0(wb + r * nb, xb + t * nb, nb);
            return;
        }
        case quant::kTypeF32: {
            for (int64_t r = tile.r0; r < tile.r1; ++r) {
                const float* wr = reinterpret_cast<const float*>(w.row(r));
                for (int64_t t = 0; t < n_tokens; ++t) y[t * rows + r] = dot_f32(wr, job.x + t * cols, cols);
            }
            return;
        }
        default: {  // F16, BF16, IQ4_NL, Q4_K, Q5_K, Q6_K: each row to float32 once, then every token
            row.resize(size_t(cols));
            for (int64_t r = tile.r0; r < tile.r1; ++r) {
                const uint8_t* src = w.row(r);
                if (w.type == quant::kTypeF16) quant::f16_to_f32_row(reinterpret_cast<const uint16_t*>(src), row.data(), cols);
                else if (w.type == quant::kTypeBF16) quant::bf16_to_f32_row(reinterpret_cast<const uint16_t*>(src), row.data(), cols);
                else quant::dequantize_row(w.type, src, row.data(), cols);
                for (int64_t t = 0; t < n_tokens; ++t) y[t * rows + r] = dot_f32(row.data(), job.x + t * cols, cols);
            }
            return;
        }
        }
    };
    pool_->parallel_for(int64_t(tiles_.size()), [&](int64_t begin, int64_t end) {
        std::vector<float> row;
        for (int64_t i = begin; i < end; ++i) run_tile(tiles_[size_t(i)], row);
    });
}

}  // namespace strata::exec
