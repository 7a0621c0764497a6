// DeviceMatmul (matmul.hpp): gemv for decode sizes; for prefill sizes the measured choice between
// the tensor-core kernel (any quantized type) and dequantize-to-f16 + cuBLAS. UNTESTED ON A GPU.
#include "matmul.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <span>

#include <cuda_fp16.h>

#include "cublas_loader.hpp"
#include "cuda_error.hpp"
#include "kernels/products/gemm.cuh"
#include "kernels/products/gemv.cuh"
#include "gpu_types.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/type_ids.hpp"
#include "util/error.hpp"

namespace strata::cuda {
namespace {

using exec::MatmulPath;

// The f16 weight panel of the cuBLAS path: as many whole rows as fit in this budget (a multiple of
// 128 when that many fit, so panels split on GEMM tile boundaries), at least one.
constexpr uint64_t kPanelBudget = uint64_t(64) << 20;
constexpr int64_t kPanelRowMultiple = 128;

struct Workspace {
    uint64_t act = 0, x16 = 0, panel = 0;
    int64_t panel_rows = 0;
};

// What the constructor allocates for these limits (and so workspace_bytes reports).
Workspace workspace_for(const MatmulLimits& l) {
    // Token counts and widths reach the kernels and cuBLAS as int.
    if (l.max_cols < 1 || l.max_rows < 1 || l.max_tokens < 1 || l.max_cols > INT_MAX || l.max_rows > INT_MAX ||
        l.max_tokens > INT_MAX)
        fail(Status::invalid_argument, "DeviceMatmul: limits must be in 1..2^31-1 (cols " +
                                           std::to_string(l.max_cols) + ", rows " + std::to_string(l.max_rows) +
                                           ", tokens " + std::to_string(l.max_tokens) + ")");
    Workspace w;
    // Quantized activations for gemv: Q8_K (K-quant and i-quant weights) or Q8_0 blocks, whichever
    // is larger, for the widest row rounded up to whole superblocks.
    const int64_t act_cols = (l.max_cols + quant::kQK_K - 1) / quant::kQK_K * quant::kQK_K;
    w.act = std::max(gemv_act_bytes(quant::kTypeIQ1_S, act_cols, kGemvMaxTokens),
                     gemv_act_bytes(quant::kTypeQ8_0, act_cols, kGemvMaxTokens));
    if (l.max_tokens > kGemvMaxTokens) {  // prefill sizes: f16 activations and the weight panel
        w.x16 = uint64_t(l.max_tokens) * uint64_t(l.max_cols) * sizeof(__half);
        int64_t fit = int64_t(kPanelBudget / (uint64_t(l.max_cols) * sizeof(__half)));
        if (fit >= kPanelRowMultiple) fit -= fit % kPanelRowMultiple;
        w.panel_rows = std::clamp<int64_t>(fit, 1, l.max_rows);
        w.panel = uint64_t(w.panel_rows) * uint64_t(l.max_cols) * sizeof(__half);
    }
    return w;
}

void free_device(void*& p) {
    if (p) cudaFree(p);  // nothing to do about a failure while releasing
    p = nullptr;
}

std::string shape_text(const DeviceMatrix& w, int64_t n_tokens) {
    return "type " + std::to_string(w.type) + " " + std::to_string(w.rows) + " x " + std::to_string(w.cols) + ", " +
           std::to_string(n_tokens) + " tokens";
}

// One prefill product on `path`, enqueued on stream: x to f16 once, then either the MMA kernel or,
// per weight panel, dequantize + cuBLAS writing that panel's columns of y (row stride w.rows).
struct Prefill {
    const DeviceMatrix& w;
    const float* x;
    int64_t n_tokens;
    float* y;
    __half* x16;
    __half* panel;
    int64_t panel_rows;
    Cublas* cublas;
    cudaStream_t stream;

    cudaError_t launch(MatmulPath path) const {
        if (cudaError_t e = f32_to_f16(x, size_t(n_tokens) * size_t(w.cols), x16, stream); e != cudaSuccess) return e;
        if (path == MatmulPath::mma) return gemm_mma(w, x16, int(n_tokens), y, stream);
        if (path != MatmulPath::cublas || !cublas) return cudaErrorInvalidValue;
        for (int64_t r0 = 0; r0 < w.rows; r0 += panel_rows) {
            const int64_t nr = std::min(panel_rows, w.rows - r0);
            if (cudaError_t e = dequantize_rows_f16(w, r0, nr, panel, stream); e != cudaSuccess) return e;
            if (cudaError_t e = cublas->gemm_f16(panel, x16, int(nr), int(n_tokens), int(w.cols), y + r0,
                                                 int(w.rows), stream);
                e != cudaSuccess)
                return e;
        }
        return cudaSuccess;
    }

    // Seconds of one run timed with events (after a warm-up run that pays for lazy module loading
    // and cuBLAS's heuristics), or -1 when the path refuses the shape. Synchronizes the stream.
    double time(MatmulPath path) const {
        const cudaError_t first = launch(path);
        if (first == cudaErrorInvalidValue || first == cudaErrorNotSupported || first == cudaErrorInvalidConfiguration)
            return -1.0;
        check(first, "DeviceMatmul: timing a matmul path");
        cudaEvent_t start = nullptr, stop = nullptr;
        check(cudaEventCreate(&start), "DeviceMatmul: cudaEventCreate");
        if (cudaError_t e = cudaEventCreate(&stop); e != cudaSuccess) {
            cudaEventDestroy(start);
            check(e, "DeviceMatmul: cudaEventCreate");
        }
        cudaError_t e = cudaEventRecord(start, stream);
        if (e == cudaSuccess) e = launch(path);
        if (e == cudaSuccess) e = cudaEventRecord(stop, stream);
        if (e == cudaSuccess) e = cudaEventSynchronize(stop);
        float ms = -1.0f;
        if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start, stop);
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
        check(e, "DeviceMatmul: timing a matmul path");
        return double(ms) * 1e-3;
    }
};

}  // namespace

uint64_t DeviceMatmul::workspace_bytes(const MatmulLimits& limits) {
    const Workspace w = workspace_for(limits);
    return w.act + w.x16 + w.panel;
}

DeviceMatmul::DeviceMatmul(const MatmulLimits& limits, cudaStream_t stream) : limits_(limits), stream_(stream) {
    const Workspace w = workspace_for(limits);
    try {
        if (w.act) check(cudaMalloc(&act_, w.act), "DeviceMatmul: quantized activations");
        if (w.x16) check(cudaMalloc(&x16_, w.x16), "DeviceMatmul: f16 activations");
        if (w.panel) check(cudaMalloc(&panel_, w.panel), "DeviceMatmul: f16 weight panel");
    } catch (...) {
        free_device(act_);
        free_device(x16_);
        free_device(panel_);
        throw;
    }
    panel_rows_ = w.panel_rows;
    if (limits.max_tokens > kGemvMaxTokens)
        cublas_ = Cublas::get(&cublas_why_);
    else
        cublas_why_ = "not loaded: these limits (at most " + std::to_string(limits.max_tokens) +
                      " tokens) never leave gemv";
}

DeviceMatmul::~DeviceMatmul() {
    free_device(act_);
    free_device(x16_);
    free_device(panel_);
}

bool DeviceMatmul::has_cublas(std::string* why) const {
    if (!cublas_ && why) *why = cublas_why_;
    return cublas_ != nullptr;
}

void DeviceMatmul::run(const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y) {
    if (n_tokens < 1 || n_tokens > limits_.max_tokens || w.cols < 1 || w.cols > limits_.max_cols || w.rows < 1 ||
        w.rows > limits_.max_rows)
        fail(Status::invalid_argument,
             "DeviceMatmul: " + shape_text(w, n_tokens) + " is beyond the limits (" + std::to_string(limits_.max_rows) +
                 " rows, " + std::to_string(limits_.max_cols) + " cols, " + std::to_string(limits_.max_tokens) +
                 " tokens)");
    if (!w.data || !x || !y) fail(Status::invalid_argument, "DeviceMatmul: null pointer for " + shape_text(w, n_tokens));
    if (!gemv_supports(w.type))
        fail(Status::unsupported, "DeviceMatmul: weight type " + std::to_string(w.type) +
                                      " is not one the CUDA products take (" + gpu_weight_type_names() + ")");

    if (n_tokens <= kGemvMaxTokens) {  // no sync, no allocation: graph-capturable
        check(quantize_activations(w.type, x, w.cols, int(n_tokens), act_, stream_), "DeviceMatmul: quantize_activations");
        check(gemv(w, x, act_, int(n_tokens), y, stream_), "DeviceMatmul: gemv");
        return;
    }

    std::array<MatmulPath, 2> candidates{};
    size_t n_candidates = 0;
    if (gemm_mma_supports(w.type, w.cols)) candidates[n_candidates++] = MatmulPath::mma;
    if (cublas_) candidates[n_candidates++] = MatmulPath::cublas;
    if (n_candidates == 0) {
        // No tensor-core kernel for this type or width (float types, rows of partial 64-column
        // chunks) and no cuBLAS: the decode products, eight tokens at a time (slow, never refused).
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kGemvMaxTokens) {
            const int nt = int(std::min<int64_t>(kGemvMaxTokens, n_tokens - t0));
            const float* xt = x + t0 * w.cols;
            check(quantize_activations(w.type, xt, w.cols, nt, act_, stream_), "DeviceMatmul: quantize_activations");
            check(gemv(w, xt, act_, nt, y + t0 * w.rows, stream_), "DeviceMatmul: gemv (no prefill path)");
        }
        return;
    }

    const Prefill prefill{w, x, n_tokens, y, static_cast<__half*>(x16_), static_cast<__half*>(panel_), panel_rows_,
                          cublas_, stream_};
    const exec::MatmulShape shape{w.type, w.rows, w.cols, n_tokens};
    const MatmulPath path =
        chooser_.choose(shape, kGemvMaxTokens, std::span<const MatmulPath>(candidates.data(), n_candidates),
                        [&](MatmulPath p) { return prefill.time(p); });
    check(prefill.launch(path), "DeviceMatmul: prefill product");
}

}  // namespace strata::cuda
