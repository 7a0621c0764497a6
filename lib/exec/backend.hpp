// The backend interface: where the forward pass's heavy operations run.
//
// Grain: one weight matrix times a batch of activation rows (matmul), plus a parallel loop for the
// per-(token, head) attention work. The forward pass (context.cpp) is host code that owns the
// activations in host memory and calls these. A device backend (CUDA) will implement the same
// calls first (weights uploaded once, activations copied per call), then move to a coarser grain
// (a whole layer per call, activations resident) by overriding more virtuals here; the CPU backend
// is the reference every other backend is compared with.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "model/weights.hpp"

namespace strata::exec {

using model::WeightView;

// One product of a matmul_many call: y = W x for n_tokens rows of x (as matmul).
struct MatmulJob {
    const WeightView* w;
    const float* x;
    int64_t n_tokens;
    float* y;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual const char* name() const = 0;
    virtual int n_threads() const = 0;

    // y[t * w.rows + r] = sum_c W[r][c] * x[t * w.cols + c] for t < n_tokens, r < w.rows.
    // Each output element is computed by the same code whatever the thread count or n_tokens
    // (bit-identical between prefill and one-token decode, and between thread counts).
    virtual void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y) = 0;

    // Independent products in one dispatch (the heads of latent attention, the experts of an MoE
    // layer): each output element is computed exactly as matmul computes it.
    virtual void matmul_many(std::span<const MatmulJob> jobs) {
        for (const MatmulJob& j : jobs) matmul(*j.w, j.x, j.n_tokens, j.y);
    }

    // fn(begin, end) over a split of [0, n); returns when all are done.
    virtual void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) = 0;

    // Bytes of scratch matmul needs for n_tokens rows of at most max_cols (for the memory plan;
    // matmul_many: n_tokens summed over its jobs).
    virtual uint64_t matmul_scratch_bytes(int64_t n_tokens, int64_t max_cols) const = 0;
};

}  // namespace strata::exec
