// K3's FFN activation and attention residuals (lib/model/kimi_linear.md).
#include <algorithm>
#include <cmath>

#include "context.hpp"
#include "context_scratch.hpp"
#include "exec/ops.hpp"

namespace strata::exec {

// SwiGLU, or SiTU: beta tanh(g/beta) sigmoid(g) * (lin > 0 ? lin tanh(u/lin) : u).
// Element-wise, so a prefill batch is split over the backend's threads in fixed chunks.
void Context::activate(float* gate, const float* up, int64_t n) const {
    const double beta = hp_.moe.situ_beta, lin = hp_.moe.situ_linear_beta;
    const float b = float(beta), l = float(lin);
    auto run = [&](int64_t i0, int64_t i1) {
        if (beta <= 0.0) {
            swiglu(gate + i0, up + i0, i1 - i0);
            return;
        }
        for (int64_t i = i0; i < i1; ++i) {
            const float g = gate[i];
            const float u = l > 0.0f ? l * std::tanh(up[i] / l) : up[i];
            gate[i] = b * std::tanh(g / b) / (1.0f + std::exp(-g)) * u;
        }
    };
    constexpr int64_t kChunk = 16384;  // large enough to amortise a thread's wake-up
    if (n < 2 * kChunk || backend_->n_threads() < 2) {
        run(0, n);
        return;
    }
    backend_->parallel_for((n + kChunk - 1) / kChunk, [&](int64_t c0, int64_t c1) {
        run(c0 * kChunk, std::min(n, c1 * kChunk));
    });
}

void Context::for_rows(int64_t n, const std::function<void(int64_t)>& fn) const {
    if (n < 8 || backend_->n_threads() < 2) {
        for (int64_t i = 0; i < n; ++i) fn(i);
        return;
    }
    backend_->parallel_for(n, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) fn(i);
    });
}

void Context::norm_rows(const float* in, const float* w, int64_t n, int64_t E, float* out) const {
    for_rows(n, [&](int64_t t) { rms_norm(in + t * E, w, E, hp_.rms_eps, out + t * E); });
}

// Per token: scores = rms_norm(entry) . w over the banked checkpoints and x, softmax, mix.
void Context::attn_res_mix(const float* x, const float* w, int64_t n, float* out) {
    const int64_t E = hp_.n_embd, M = hp_.max_banks();
    std::vector<float> score(size_t(n_bank_ + 1));
    auto rms_dot = [&](const float* v) {
        double ss = 0.0, dot = 0.0;
        for (int64_t c = 0; c < E; ++c) {
            ss += double(v[c]) * double(v[c]);
            dot += double(v[c]) * double(w[c]);
        }
        return float(dot / std::sqrt(ss / double(E) + hp_.rms_eps));
    };
    for (int64_t t = 0; t < n; ++t) {
        const float* xt = x + t * E;
        const float* bank = s_->bank.data() + t * M * E;
        for (int64_t j = 0; j < n_bank_; ++j) score[size_t(j)] = rms_dot(bank + j * E);
        score[size_t(n_bank_)] = rms_dot(xt);
        softmax(score.data(), n_bank_ + 1);
        float* o = out + t * E;
        for (int64_t c = 0; c < E; ++c) o[c] = score[size_t(n_bank_)] * xt[c];
        for (int64_t j = 0; j < n_bank_; ++j)
            for (int64_t c = 0; c < E; ++c) o[c] += score[size_t(j)] * bank[j * E + c];
    }
}

}  // namespace strata::exec
