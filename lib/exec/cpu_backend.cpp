#include "exec/cpu_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "quant/convert.hpp"
#include "quant/formats.hpp"
#include "quant/dot/gemv.hpp"
#include "quant/gemm/gemm_tokens.hpp"
#include "quant/half.hpp"
#include "quant/gemm/iq1s_gemm.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant/type_ids.hpp"
#include "quant/type_traits.hpp"
#include "util/error.hpp"
#include "util/thread_pool.hpp"

namespace strata::exec {

namespace {

// Rows per inner tile: the tile's weights stay in cache while every token of the batch uses them.
constexpr int64_t kRowTile = 16;

// Tokens per piece of activation quantization handed to a thread (a multiple of the GEMM's token
// group, so each piece packs whole groups).
constexpr int64_t kQuantizeTokens = 16;
static_assert(kQuantizeTokens % quant::kIq1sGemmTokenGroup == 0);

// 64-byte aligned start of a byte buffer sized with 64 bytes to spare.
uint8_t* aligned64(std::vector<uint8_t>& buf) {
    const auto p = reinterpret_cast<uintptr_t>(buf.data());
    return buf.data() + ((64 - p % 64) % 64);
}

// The tile's packed IQ1_S weights, per pool thread (the pool's threads live as long as the
// backend, and a tile is packed and used by one thread).
uint8_t* tile_weight_panel(size_t bytes) {
    thread_local std::vector<uint8_t> panel;
    if (panel.size() < bytes + 64) panel.resize(bytes + 64);
    return aligned64(panel);
}

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
    // The IQ1_S GEMM: the tokens' packed activations and, per thread, one tile's packed weights.
    const uint64_t gemm = quant::iq1s_gemm_act_bytes(max_cols / 256 * 256, n_tokens) +
                          uint64_t(n_threads) * quant::iq1s_gemm_weight_bytes(max_cols / 256 * 256, kRowTile);
    return q8k + rows + gemm;
}

void CpuBackend::matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y) {
    const MatmulJob job{&w, x, n_tokens, y};
    matmul_many({&job, 1});
}

void CpuBackend::matmul_many(std::span<const MatmulJob> jobs) {
    // Check every job, and quantize the activations the integer kernels need (the type ggml pairs
    // with the weights: Q8_K, Q8_0 or Q8_1), each job's at its own offset.
    xq_offset_.assign(jobs.size(), 0);
    shared_act_.assign(jobs.size(), -1);
    job_kernel_.assign(jobs.size(), JobKernel{});
    size_t xq_bytes = 0;
    const bool scalar = kernel_ == quant::Iq1sKernel::scalar;
    // The IQ1_S jobs that run as a GEMM get their activations packed too (after quantizing).
    // (The GEMM gives the simd kernel's bits; an explicit avx2 order runs one-row dots.)
    const bool gemm = kernel_ == quant::Iq1sKernel::simd && quant::iq1s_gemm_available();
    auto runs_gemm = [gemm](const MatmulJob& job) {
        return gemm && job.w->type == quant::kTypeIQ1_S && job.n_tokens >= quant::iq1s_gemm_min_tokens();
    };
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
            // The multi-token kernels give best_vec_dot's bits (quant/gemm/gemm_tokens.hpp).
            if (job.n_tokens >= 2) k.multi = quant::find_multi_dot(traits, scalar);
            k.act_row_bytes = quant::row_size(traits.dot_type, w.cols);
            // An earlier job over the same activations in the same quantized type (an MoE expert's
            // gate and up, a layer's q/k/v) lends its quantized rows instead of quantizing again.
            for (size_t i = 0; i < j; ++i)
                if (jobs[i].x == job.x && jobs[i].n_tokens == job.n_tokens && jobs[i].w->cols == w.cols &&
                    shared_act_[i] < 0 && job_kernel_[i].act == k.act && runs_gemm(jobs[i]) == runs_gemm(job)) {
                    shared_act_[j] = int64_t(i);
                    xq_offset_[j] = xq_offset_[i];
                    break;
                }
            if (shared_act_[j] < 0) xq_bytes += size_t(job.n_tokens) * k.act_row_bytes;
        }
    }
    xq_.resize(xq_bytes);
    actp_offset_.assign(jobs.size(), SIZE_MAX);
    size_t actp_bytes = 0;
    for (size_t j = 0; j < jobs.size(); ++j)
        if (runs_gemm(jobs[j])) {
            if (shared_act_[j] >= 0) {  // the lender runs the GEMM too: its packed rows are these
                actp_offset_[j] = actp_offset_[size_t(shared_act_[j])];
                continue;
            }
            actp_offset_[j] = actp_bytes;
            actp_bytes += quant::iq1s_gemm_act_bytes(jobs[j].w->cols, jobs[j].n_tokens);
        }
    if (actp_.size() < actp_bytes + 64) actp_.resize(actp_bytes + 64);
    uint8_t* actp = aligned64(actp_);
    tiles_.clear();
    pieces_.clear();
    for (size_t j = 0; j < jobs.size(); ++j) {
        const MatmulJob& job = jobs[j];
        const WeightView& w = *job.w;
        const JobKernel& k = job_kernel_[j];
        if (k.act && shared_act_[j] < 0)
            for (int64_t t0 = 0; t0 < job.n_tokens; t0 += kQuantizeTokens)
                pieces_.push_back({int32_t(j), t0, std::min(job.n_tokens, t0 + kQuantizeTokens)});
        if (job.n_tokens == 0) continue;
        for (int64_t r0 = 0; r0 < w.rows; r0 += kRowTile) tiles_.push_back({int32_t(j), r0, std::min(w.rows, r0 + kRowTile)});
    }
    // Quantize (and for the GEMM pack) the activations, split over the threads by tokens: prefill
    // quantizes hundreds of tokens per product, which would otherwise run on one thread.
    auto quantize_piece = [&](const Tile& piece) {
        const MatmulJob& job = jobs[size_t(piece.job)];
        const JobKernel& k = job_kernel_[size_t(piece.job)];
        const int64_t cols = job.w->cols;
        uint8_t* xq = xq_.data() + xq_offset_[size_t(piece.job)];
        for (int64_t t = piece.r0; t < piece.r1; ++t)
            k.act->quantize(job.x + t * cols, xq + size_t(t) * k.act_row_bytes, cols, nullptr);
        if (actp_offset_[size_t(piece.job)] != SIZE_MAX)  // piece starts are multiples of the token group
            quant::iq1s_gemm_pack_act(cols, reinterpret_cast<const quant::block_q8_K*>(xq + size_t(piece.r0) * k.act_row_bytes),
                                      piece.r1 - piece.r0,
                                      actp + actp_offset_[size_t(piece.job)] + quant::iq1s_gemm_act_bytes(cols, piece.r0));
    };
    if (pieces_.size() > 1)
        pool_->parallel_for(int64_t(pieces_.size()), [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) quantize_piece(pieces_[size_t(i)]);
        });
    else if (pieces_.size() == 1)
        quantize_piece(pieces_[0]);
    if (tiles_.empty()) return;

    const bool avx2 = kernel_ != quant::Iq1sKernel::scalar;
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
        if (actp_offset_[size_t(tile.job)] != SIZE_MAX) {  // IQ1_S as a GEMM: the tile's rows decoded once
            const int64_t nb = cols / quant::kQK_K, n_rows = tile.r1 - tile.r0;
            const auto* wb = reinterpret_cast<const quant::block_iq1_s*>(w.data);
            uint8_t* panel = tile_weight_panel(quant::iq1s_gemm_weight_bytes(cols, n_rows));
            quant::iq1s_gemm_pack_weights(cols, wb + tile.r0 * nb, nb, n_rows, panel);
            quant::iq1s_gemm(cols, panel, n_rows, actp + actp_offset_[size_t(tile.job)], 0, n_tokens, y + tile.r0, rows);
            return;
        }
        if (w.type == quant::kTypeIQ1_S && avx2) {  // four rows share each activation load
            const int64_t nb = cols / quant::kQK_K;
            const auto* wb = reinterpret_cast<const quant::block_iq1_s*>(w.data);
            const auto* xb = reinterpret_cast<const quant::block_q8_K*>(xq);
            const auto rows_kernel = kernel_ == quant::Iq1sKernel::simd ? quant::vec_dot_iq1s_q8k_simd_rows
                                                                         : quant::vec_dot_iq1s_q8k_avx2_rows;
            for (int64_t t = 0; t < n_tokens; ++t)
                rows_kernel(cols, wb + tile.r0 * nb, nb, tile.r1 - tile.r0, xb + t * nb, y + t * rows + tile.r0);
            return;
        }
#endif
        if (k.multi.fn) {  // several rows x several tokens per call, each weight block unpacked once
            for (int64_t t0 = 0; t0 < n_tokens; t0 += k.multi.max_tokens) {
                const int nt = int(std::min<int64_t>(k.multi.max_tokens, n_tokens - t0));
                for (int64_t r0 = tile.r0; r0 < tile.r1; r0 += k.multi.max_rows) {
                    const int nr = int(std::min<int64_t>(k.multi.max_rows, tile.r1 - r0));
                    k.multi.fn(cols, w.row(r0), size_t(w.row_bytes), nr, xq + size_t(t0) * k.act_row_bytes,
                               k.act_row_bytes, nt, y + t0 * rows + r0, rows);
                }
            }
            return;
        }
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
