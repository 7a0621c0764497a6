// Kimi Delta Attention (lib/model/kimi_linear.md, "KDA, step by step"): projections, the short
// causal convolution with its rolling window, then per head the L2-normalized q and k, the
// per-channel decay, the gated delta rule over the dk x dk state (kda_recurrence.hpp), the normed
// and gated output. Heads run in parallel. The step form (the default) computes each token the
// same way whatever the batch, so one-token decode reproduces prefill exactly; with
// ContextParams::kda_chunk > 0 a prefill of several tokens uses the chunked form instead, equal
// up to float rounding.
#include <algorithm>
#include <cmath>

#include "context.hpp"
#include "context_scratch.hpp"
#include "exec/kda/kda_recurrence.hpp"
#include "exec/ops.hpp"

namespace strata::exec {

namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// Depthwise causal conv of n tokens of one stream in place (x: [n][D]), then SiLU. window:
// [D][K-1] the previous inputs of each channel, oldest first, advanced past these tokens.
void causal_conv_silu(float* x, int64_t n, int64_t D, const float* w, int64_t K, float* window) {
    const int64_t taps = K - 1;
    for (int64_t t = 0; t < n; ++t) {
        float* row = x + t * D;
        for (int64_t c = 0; c < D; ++c) {
            float* win = window + c * taps;
            const float* wc = w + c * K;
            float acc = wc[taps] * row[c];  // tap K-1 multiplies the current token
            for (int64_t j = 0; j < taps; ++j) acc += wc[j] * win[j];
            for (int64_t j = 0; j + 1 < taps; ++j) win[j] = win[j + 1];
            if (taps > 0) win[taps - 1] = row[c];
            row[c] = acc / (1.0f + std::exp(-acc));
        }
    }
}

void l2_normalize(float* v, int64_t n, double eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += double(v[i]) * double(v[i]);
    const float inv = float(1.0 / std::max(std::sqrt(ss), eps));
    for (int64_t i = 0; i < n; ++i) v[i] *= inv;
}

}  // namespace

void Context::attention_kda(int64_t li, int64_t n) {
    const model::LayerWeights& L = w_.layers[size_t(li)];
    const int64_t D = hp_.kda_width(), K = hp_.kda.conv_kernel;
    Scratch& s = *s_;
    const int64_t slot = kda_slot_[size_t(li)];

    // Every projection of the normed input in one dispatch, then the second low-rank halves.
    const float* xn = s.xn.data();
    std::vector<MatmulJob>& jobs = s.jobs;
    jobs.clear();
    jobs.push_back({&L.wq, xn, n, s.kq.data()});
    jobs.push_back({&L.wk, xn, n, s.kk.data()});
    jobs.push_back({&L.wv, xn, n, s.kv.data()});
    jobs.push_back({&L.w_beta, xn, n, s.kbeta.data()});
    jobs.push_back({&L.f_a, xn, n, s.klow.data()});
    if (L.g_full.present()) jobs.push_back({&L.g_full, xn, n, s.kgate.data()});
    backend_->matmul_many(jobs);
    backend_->matmul(L.f_b, s.klow.data(), n, s.kz.data());
    if (!L.g_full.present()) {
        backend_->matmul(L.g_a, xn, n, s.klow.data());
        backend_->matmul(L.g_b, s.klow.data(), n, s.kgate.data());
    }
    // The convolution and the recurrence run each sequence slot's tokens with its own state.
    for (const SeqRun& r : s.runs) {
        const int64_t off = r.first * D;
        causal_conv_silu(s.kq.data() + off, r.n, D, L.conv_q.data(), K, kda_.conv(r.seq, slot, 0));
        causal_conv_silu(s.kk.data() + off, r.n, D, L.conv_k.data(), K, kda_.conv(r.seq, slot, 1));
        causal_conv_silu(s.kv.data() + off, r.n, D, L.conv_v.data(), K, kda_.conv(r.seq, slot, 2));
        kda_heads(li, r.seq, r.first, r.n);
    }
    backend_->matmul(L.wo, s.attn.data(), n, s.proj.data());
}

void Context::kda_heads(int64_t li, int32_t seq, int64_t first, int64_t n) {
    const model::LayerWeights& L = w_.layers[size_t(li)];
    const model::KdaParams& k = hp_.kda;
    const int64_t H = hp_.n_head, dk = k.head_dim, D = hp_.kda_width();
    const int64_t slot = kda_slot_[size_t(li)];
    const float q_scale = float(1.0 / std::sqrt(double(dk)));
    const double eps = hp_.rms_eps;
    const bool chunked = kda_chunk_ > 0 && n > 1;
    Scratch& s = *s_;
    backend_->parallel_for(H, [&](int64_t begin, int64_t end) {
        // One head's tokens as contiguous rows: q, k, v, log decay g, beta, output.
        std::vector<float> q(static_cast<size_t>(n * dk)), kk(q.size()), v(q.size()), g(q.size()), o(q.size());
        std::vector<float> beta(static_cast<size_t>(n)), work;
        for (int64_t h = begin; h < end; ++h) {
            const float a = L.ssm_a[size_t(h)];  // -exp(A_log)
            for (int64_t t = 0; t < n; ++t) {
                const size_t src = size_t((first + t) * D + h * dk), dst = size_t(t * dk);
                std::copy(s.kq.begin() + src, s.kq.begin() + src + dk, q.begin() + dst);
                std::copy(s.kk.begin() + src, s.kk.begin() + src + dk, kk.begin() + dst);
                std::copy(s.kv.begin() + src, s.kv.begin() + src + dk, v.begin() + dst);
                l2_normalize(q.data() + dst, dk, eps);
                l2_normalize(kk.data() + dst, dk, eps);
                for (int64_t i = 0; i < dk; ++i) q[dst + size_t(i)] *= q_scale;
                for (int64_t i = 0; i < dk; ++i) {
                    const float zi = s.kz[src + size_t(i)] + L.dt_bias[size_t(h * dk + i)];
                    g[dst + size_t(i)] = k.lower_bound_gate ? float(k.gate_lower_bound) * sigmoid(-a * zi) : a * softplus(zi);
                }
                beta[size_t(t)] = sigmoid(s.kbeta[size_t((first + t) * H + h)]);
            }
            float* S = kda_.state(seq, slot, h);
            if (chunked) {
                for (int64_t c0 = 0; c0 < n; c0 += kda_chunk_) {
                    const int64_t m = std::min(kda_chunk_, n - c0);
                    const size_t off = size_t(c0 * dk);
                    kda_chunk(S, dk, m, q.data() + off, kk.data() + off, v.data() + off, g.data() + off,
                              beta.data() + c0, o.data() + off, work);
                }
            } else {
                for (int64_t t = 0; t < n; ++t) {
                    const size_t off = size_t(t * dk);
                    kda_step(S, dk, q.data() + off, kk.data() + off, v.data() + off, g.data() + off, beta[size_t(t)],
                             o.data() + off);
                }
            }
            for (int64_t t = 0; t < n; ++t) {  // the per-head norm and the sigmoid gate
                float* y = s.attn.data() + (first + t) * D + h * dk;
                rms_norm(o.data() + t * dk, L.ssm_norm.data(), dk, eps, y);
                const float* gate = s.kgate.data() + (first + t) * D + h * dk;
                for (int64_t j = 0; j < dk; ++j) y[j] *= sigmoid(gate[j]);
            }
        }
    });
}

}  // namespace strata::exec
