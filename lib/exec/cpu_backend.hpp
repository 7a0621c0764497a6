// The CPU backend: matmul for every weight type lib/quant implements (quant/type_traits.hpp), rows
// split over a ThreadPool.
//
//   quantized types  activations quantized once per token to the type ggml pairs with the weights
//          (Q8_K for the K-quants, IQ and ternary types; Q8_0 for Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4,
//          Q1_0; Q8_1 for Q4_1, Q5_1), then the type's integer dot per row in ggml's arithmetic
//          (AVX2 where the type has a kernel, else the scalar reference; IQ1_S runs four rows per
//          activation load). Several tokens: IQ1_S as a GEMM that decodes each weight block once
//          per tile of rows (quant/gemm/iq1s_gemm.hpp), the legacy, K-quant and IQ4_XS types through
//          multi-token kernels (quant/gemm/gemm_tokens.hpp), both with the one-token dot's bits.
//   F16/BF16  each weight row converted to float32 once per call, then dotted with every token.
//   F32    dot_f32 (AVX2 eight-lane or scalar).
// Every output element is one row-times-token dot computed by fixed code, so results do not
// depend on the thread count or on how many tokens share the call.
#pragma once

#include <memory>
#include <vector>

#include "exec/backend.hpp"
#include "quant/gemm/gemm_tokens.hpp"
#include "quant/dot/iq1s_dot.hpp"
#include "quant/type_traits.hpp"

namespace strata::util {
class ThreadPool;
}

namespace strata::exec {

class CpuBackend final : public Backend {
public:
    // n_threads <= 0: hardware concurrency. kernel: IQ1_S/F32 kernel choice (best = AVX2 if present).
    explicit CpuBackend(int n_threads = 0, quant::Iq1sKernel kernel = quant::Iq1sKernel::best);
    ~CpuBackend() override;

    const char* name() const override { return "cpu"; }
    int n_threads() const override;
    void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y) override;
    // One parallel loop over the row tiles of every job (activations quantized first, per job).
    void matmul_many(std::span<const MatmulJob> jobs) override;
    void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) override;
    uint64_t matmul_scratch_bytes(int64_t n_tokens, int64_t max_cols) const override;
    // The same for a backend of n_threads threads (as n_threads() counts them), without one.
    static uint64_t matmul_scratch_bytes_for(int n_threads, int64_t n_tokens, int64_t max_cols);

    // True for the weight types matmul accepts.
    static bool supports(uint32_t ggml_type);

private:
    std::unique_ptr<util::ThreadPool> pool_;
    quant::Iq1sKernel kernel_;
    std::vector<uint8_t> xq_;  // quantized activations of every job, reused between calls
    std::vector<size_t> xq_offset_;
    std::vector<int64_t> shared_act_;  // per job: the earlier job whose quantized activations it reads, or -1
    std::vector<uint8_t> actp_;        // IQ1_S GEMM jobs' packed activations (quant/gemm/iq1s_gemm.hpp)
    std::vector<size_t> actp_offset_;  // per job; SIZE_MAX: the job runs row by row
    struct Tile {
        int32_t job;
        int64_t r0, r1;
    };
    std::vector<Tile> tiles_;
    std::vector<Tile> pieces_;  // activation quantization: job, tokens [r0, r1)
    struct JobKernel {  // per job of the current call
        const quant::TypeTraits* traits = nullptr;
        const quant::TypeTraits* act = nullptr;  // the activations' type; null for float activations
        quant::VecDotFn dot = nullptr;
        quant::MultiDot multi;  // for two tokens or more: the type's multi-token kernel, if any
        size_t act_row_bytes = 0;
    };
    std::vector<JobKernel> job_kernel_;
};

}  // namespace strata::exec
