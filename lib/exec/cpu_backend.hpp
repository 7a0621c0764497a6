// The CPU backend: matmul for F32, F16, BF16, Q8_0, IQ1_S, IQ4_NL, Q4_K, Q5_K and Q6_K weights,
// rows split over a ThreadPool.
//
//   IQ1_S  activations quantized to Q8_K once per token, then the IQ1_S x Q8_K dot per row
//          (AVX2 row-group kernel or scalar; quant/iq1s_dot.hpp), as ggml does on x86.
//   Q8_0   activations quantized to Q8_0 once per token, then an integer q8_0 x q8_0 dot per
//          block, scaled by d_w * d_x (ggml's vec_dot_q8_0_q8_0 arithmetic, summed in float).
//   F16/BF16, IQ4_NL, Q4_K, Q5_K, Q6_K  each weight row converted to float32 once per call
//          (quant::dequantize_row, ggml's decode bit for bit), then dotted with every token.
//   F32    dot_f32 (AVX2 eight-lane or scalar).
// Every output element is one row-times-token dot computed by fixed code, so results do not
// depend on the thread count or on how many tokens share the call.
#pragma once

#include <memory>
#include <vector>

#include "exec/backend.hpp"
#include "quant/iq1s_dot.hpp"

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
    struct Tile {
        int32_t job;
        int64_t r0, r1;
    };
    std::vector<Tile> tiles_;
};

}  // namespace strata::exec
