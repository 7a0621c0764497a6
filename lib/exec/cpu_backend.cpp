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
#include "quant/type_traits.hpp"
#include "util/error.hpp"
#include "util/thread_pool.hpp"

namespace strata::exec {

namespace {

// Rows per inner tile: the tile's weights stay in cache while every token of the batch uses them.
constexpr int64_t kRowTile = 16;

// The traits of a weight's type, or Error(unsupported) naming the tensor, its type and the types
// the CPU runs.
const quant::TypeTraits& weight_traits(const WeightView& w) {
    const quant::TypeTraits* t = quant::find_type_traits(w.type);
    if (!t || !quant::is_weight_type(*t))
        fail(Status::unsupported, "matmul: tensor '" + w.name + "' has ggml type " + std::to_string(w.type) +
                                      (t ? std::string(" (") + t->name + ")" : std::string()) +
                                      ", which the CPU backend does not run (it runs " + quant::supported_type_names() +
                                      " except the activation-only q8_1 and q8_K)");
    return *t;
}

}  // namespace

CpuBackend::CpuBackend(int n_threads, quant::Iq1sKernel kernel)
    : pool_(std::make_unique<util::ThreadPool>(n_threads > 0 ? n_threads : 0)),
      kernel_(quant::resolve_iq1s_kernel(kernel)) {}

CpuBackend::~CpuBackend() = default;

int CpuBackend::n_threads() const { return pool_->size(); }

bool CpuBackend::supports(uint32_t t) {
    const quant::TypeTraits* traits = quant::find_type_traits(t);
    return traits && quant::is_weight_type(*traits);
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
    // Check every job, and quantize the activations the integer kernels need (the type ggml pairs
    // with the weights: Q8_K, Q8_0 or Q8_1), each job's at its own offset.
    xq_offset_.assign(jobs.size(), 0);
    job_kernel_.assign(jobs.size(), JobKernel{});
    size_t xq_bytes = 0;
    const bool scalar = kernel_ == quant::Iq1sKernel::scalar;
    for (size_t j = 0; j < jobs.size(); ++j) {
        const MatmulJob& job = jobs[j];
        if (!job.w || !job.w->present() || !job.x || !job.y || job.n_tokens < 0)
            fail(Status::invalid_argument,
                 "matmul: null buffer or negative token count for '" + (job.w ? job.w->name : std::string("?")) + "'");
        const WeightView& w = *job.w;
        const quant::TypeTraits& traits = weight_traits(w);
        if (w.cols % traits.block_elements != 0)  // here, not in a worker
            fail(Status::invalid_argument, "matmul: tensor '" + w.name + "' has rows of " + std::to_string(w.cols) +
                                               " elements, not whole blocks of its type " + traits.name);
        JobKernel& k = job_kernel_[j];
        k.traits = &traits;
        xq_offset_[j] = xq_bytes;
        if (traits.dot_type != quant::kTypeF32) {
            k.act = quant::find_type_traits(traits.dot_type);
            k.dot = quant::best_vec_dot(traits, scalar);
            k.act_row_bytes = quant::row_size(traits.dot_type, w.cols);
            xq_bytes += size_t(job.n_tokens) * k.act_row_bytes;
        }
    }
    xq_.resize(xq_bytes);
    tiles_.clear();
    for (size_t j = 0; j < jobs.size(); ++j) {
        const MatmulJob& job = jobs[j];
        const WeightView& w = *job.w;
        const JobKernel& k = job_kernel_[j];
        uint8_t* xq = xq_.data() + xq_offset_[j];
        if (k.act)
            for (int64_t t = 0; t < job.n_tokens; ++t)
                k.act->quantize(job.x + t * w.cols, xq + size_t(t) * k.act_row_bytes, w.cols, nullptr);
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
        const JobKernel& k = job_kernel_[size_t(tile.job)];
        const WeightView& w = *job.w;
        const int64_t rows = w.rows, cols = w.cols, n_tokens = job.n_tokens;
        const uint8_t* xq = xq_.data() + xq_offset_[size_t(tile.job)];
        float* y = job.y;
#if defined(__x86_64__)
        if (w.type == quant::kTypeIQ1_S && avx2) {  // four rows share each activation load
            const int64_t nb = cols / quant::kQK_K;
            const auto* wb = reinterpret_cast<const quant::block_iq1_s*>(w.data);
            const auto* xb = reinterpret_cast<const quant::block_q8_K*>(xq);
            for (int64_t t = 0; t < n_tokens; ++t)
                quant::vec_dot_iq1s_q8k_avx2_rows(cols, wb + tile.r0 * nb, nb, tile.r1 - tile.r0, xb + t * nb,
                                                  y + t * rows + tile.r0);
            return;
        }
#endif
        if (k.dot) {
            for (int64_t t = 0; t < n_tokens; ++t) {
                const uint8_t* xt = xq + size_t(t) * k.act_row_bytes;
                for (int64_t r = tile.r0; r < tile.r1; ++r) y[t * rows + r] = k.dot(cols, w.row(r), xt);
            }
            return;
        }
        if (w.type == quant::kTypeF32) {
            for (int64_t r = tile.r0; r < tile.r1; ++r) {
                const float* wr = reinterpret_cast<const float*>(w.row(r));
                for (int64_t t = 0; t < n_tokens; ++t) y[t * rows + r] = dot_f32(wr, job.x + t * cols, cols);
            }
            return;
        }
        // F16, BF16: each row to float32 once, then every token.
        row.resize(size_t(cols));
        for (int64_t r = tile.r0; r < tile.r1; ++r) {
            k.traits->decode(w.row(r), row.data(), cols);
            for (int64_t t = 0; t < n_tokens; ++t) y[t * rows + r] = dot_f32(row.data(), job.x + t * cols, cols);
        }
    };
    pool_->parallel_for(int64_t(tiles_.size()), [&](int64_t begin, int64_t end) {
        std::vector<float> row;
        for (int64_t i = begin; i < end; ++i) run_tile(tiles_[size_t(i)], row);
    });
}

}  // namespace strata::exec
