// The KDA kernels (kda.cuh) against the host and against each other, on fresh random data:
//   - the conv step and the decode step against a direct host loop and lib/exec/kda/kda_recurrence.hpp's
//     kda_step (the L2 norms, decay, norm and gate written out on the host), 5 tokens from a zero
//     state, both gate forms;
//   - kda_conv_silu over 7 tokens in two calls (the window carried) against the host loop and
//     against 7 conv steps (bit-identical);
//   - kda_step_tokens against the host step, dk 64 and 128, both gate forms, from a random state,
//     and against n calls of kda_decode_step (bit-identical outputs and state);
//   - kda_prepare + kda_chunk_prefill + kda_gate_output against kda_step_tokens (100 tokens,
//     chunks of 16 and 64: several chunks and a ragged last one), outputs and final states, with
//     kda_prepare's and kda_gate_output's own results against the host arithmetic.
// Bad shapes are refused before any launch (checked even without a GPU). Exit 77 (ctest: skipped)
// with a printed reason without a GPU; STRATA_CUDA_TEST_SMALL=1 keeps a few small cases.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_test_util.cuh"
#include "error_metrics.hpp"
#include "exec/kda/kda_recurrence.hpp"
#include "kernels/kda/kda.cuh"
#include "kernels/kda/kda_chunk.cuh"

using namespace strata;
using namespace strata::cuda_test;  // the test programs' helpers

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A device copy of a host vector, freed at scope end.
struct DeviceBuffer {
    float* p;
    explicit DeviceBuffer(const std::vector<float>& v) : p(upload(v)) {}
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { cudaFree(p); }
    std::vector<float> get(size_t n) const { return download(p, n); }
};

// e, or once the launches have run, the first asynchronous error.
cudaError_t synchronized(cudaError_t e) { return e == cudaSuccess ? cudaDeviceSynchronize() : e; }

// The conv step and the decode step token by token from a zero state against the host.
void conv_and_decode_check(bool lower_bound) {
    const int H = 3, dk = 64, D = H * dk, K = 4, n_tokens = 5;
    const float eps = 1e-5f, lb = -5.0f;
    const auto conv_w = normal(size_t(D * K), 0.5f), dt = normal(size_t(D), 0.5f), a = normal(size_t(H), 0.2f, -0.5f);
    const auto norm_w = normal(size_t(dk), 0.1f, 1.0f);
    std::vector<float> window(size_t(D * (K - 1)), 0.0f), S(size_t(H * dk * dk), 0.0f);
    float* d_w = upload(conv_w);
    float* d_dt = upload(dt);
    float* d_a = upload(a);
    float* d_norm = upload(norm_w);
    float* d_win = upload(window);
    float* d_S = upload(S);
    double err = 0.0;
    cudaError_t e = cudaSuccess;
    for (int t = 0; t < n_tokens && e == cudaSuccess; ++t) {
        auto q = normal(size_t(D)), k = normal(size_t(D)), v = normal(size_t(D)), z = normal(size_t(D));
        const auto beta_logit = normal(size_t(H)), gate = normal(size_t(D));
        // host: conv + silu of q (the same step the device does; k and v skip the conv here)
        std::vector<float> q_conv(q);
        for (int c = 0; c < D; ++c) {
            float acc = conv_w[size_t(c * K + K - 1)] * q[size_t(c)];
            for (int j = 0; j < K - 1; ++j) acc += conv_w[size_t(c * K + j)] * window[size_t(c * (K - 1) + j)];
            for (int j = 0; j + 1 < K - 1; ++j) window[size_t(c * (K - 1) + j)] = window[size_t(c * (K - 1) + j + 1)];
            window[size_t(c * (K - 1) + K - 2)] = q[size_t(c)];
            q_conv[size_t(c)] = acc / (1.0f + std::exp(-acc));
        }
        float* d_q = upload(q);
        float* d_k = upload(k);
        float* d_v = upload(v);
        float* d_z = upload(z);
        float* d_b = upload(beta_logit);
        float* d_g = upload(gate);
        float* d_y = upload(std::vector<float>(size_t(D), NAN));
        e = cuda::kda_conv_silu_step(d_q, d_w, d_win, D, K, nullptr);
        const cuda::KdaStepShape shape{H, dk, eps, lower_bound ? 1 : 0, lb};
        if (e == cudaSuccess) e = cuda::kda_decode_step(d_q, d_k, d_v, d_z, d_dt, d_a, d_b, d_g, d_norm, d_S, d_y, shape, nullptr);
        const auto y = download(d_y, size_t(D));
        for (float* p : {d_q, d_k, d_v, d_z, d_b, d_g, d_y}) cudaFree(p);
        // host: the head step
        for (int h = 0; h < H; ++h) {
            std::vector<float> qh(q_conv.begin() + h * dk, q_conv.begin() + (h + 1) * dk), kh(k.begin() + h * dk, k.begin() + (h + 1) * dk);
            auto l2 = [&](std::vector<float>& x) {
                double ss = 0.0;
                for (float f : x) ss += double(f) * f;
                for (float& f : x) f = float(f / std::max(std::sqrt(ss), double(eps)));
            };
            l2(qh);
            l2(kh);
            for (float& f : qh) f /= std::sqrt(float(dk));
            std::vector<float> g(static_cast<size_t>(dk)), o(static_cast<size_t>(dk));
            for (int i = 0; i < dk; ++i) {
                const float zi = z[size_t(h * dk + i)] + dt[size_t(h * dk + i)];
                g[size_t(i)] = lower_bound ? lb / (1.0f + std::exp(a[size_t(h)] * zi)) : a[size_t(h)] * std::log1p(std::exp(zi));
            }
            exec::kda_step(&S[size_t(h * dk * dk)], dk, qh.data(), kh.data(), &v[size_t(h * dk)], g.data(),
                           1.0f / (1.0f + std::exp(-beta_logit[size_t(h)])), o.data());
            double ms = 0.0;
            for (float f : o) ms += double(f) * f;
            const float inv = float(1.0 / std::sqrt(ms / dk + eps));
            for (int j = 0; j < dk; ++j) {
                const float want = o[size_t(j)] * inv * norm_w[size_t(j)] / (1.0f + std::exp(-gate[size_t(h * dk + j)]));
                err = std::max(err, double(std::fabs(y[size_t(h * dk + j)] - want)));
            }
        }
    }
    const auto S_dev = download(d_S, S.size());
    for (size_t i = 0; i < S.size(); ++i) err = std::max(err, double(std::fabs(S_dev[i] - S[i])));
    for (float* p : {d_w, d_dt, d_a, d_norm, d_win, d_S}) cudaFree(p);
    char what[160];
    std::snprintf(what, sizeof what, "kda conv + decode step, %s gate, 5 tokens: max err %.3g (tolerance 1e-4) (%s)",
                  lower_bound ? "lower-bound" : "softplus", err, cudaGetErrorString(e));
    report(e == cudaSuccess && err < 1e-4, what);
}

// --- kda_conv_silu: n1 + n2 tokens in two calls against the host loop and against conv steps.

// The host's causal conv + SiLU (lib/exec/context/context_kda.cpp's causal_conv_silu), x [n][D] in place.
void host_conv_silu(std::vector<float>& x, int n, int D, const std::vector<float>& w, int K, std::vector<float>& window) {
    const int taps = K - 1;
    for (int t = 0; t < n; ++t)
        for (int c = 0; c < D; ++c) {
            float* win = &window[size_t(c) * size_t(taps)];
            const float* wc = &w[size_t(c) * size_t(K)];
            float& xc = x[size_t(t) * size_t(D) + size_t(c)];
            float acc = wc[taps] * xc;
            for (int j = 0; j < taps; ++j) acc += wc[j] * win[j];
            for (int j = 0; j + 1 < taps; ++j) win[j] = win[j + 1];
            if (taps > 0) win[taps - 1] = xc;
            xc = acc / (1.0f + std::exp(-acc));
        }
}

// Tolerance relative to the largest output: K products summed (fused multiply-adds on the GPU)
// and expf within 2 ulp: a few ulp of the largest term.
constexpr double kConvTolerance = 1e-5;

void conv_check(int D, int K, int n1, int n2) {
    const int n = n1 + n2;
    const auto x = normal(size_t(n) * size_t(D)), w = normal(size_t(D) * size_t(K), 0.5f);
    const auto window0 = normal(size_t(D) * size_t(K - 1));
    std::vector<float> want = x, want_window = window0;
    host_conv_silu(want, n, D, w, K, want_window);

    DeviceBuffer d_x(x), d_w(w), d_win(window0), d_x_steps(x), d_win_steps(window0);
    cudaError_t e = cuda::kda_conv_silu(d_x.p, n1, D, d_w.p, K, d_win.p, nullptr);
    if (e == cudaSuccess) e = cuda::kda_conv_silu(d_x.p + size_t(n1) * size_t(D), n2, D, d_w.p, K, d_win.p, nullptr);
    for (int t = 0; t < n && e == cudaSuccess; ++t)
        e = cuda::kda_conv_silu_step(d_x_steps.p + size_t(t) * size_t(D), d_w.p, d_win_steps.p, D, K, nullptr);
    e = synchronized(e);
    const auto got = d_x.get(x.size()), got_window = d_win.get(window0.size());
    const auto steps = d_x_steps.get(x.size()), steps_window = d_win_steps.get(window0.size());

    const double err = max_error_over_largest(got, want);
    // The window holds copies of inputs: exact.
    const bool window_exact = same_bits(got_window, want_window);
    const bool steps_same = same_bits(steps, got) && same_bits(steps_window, got_window);
    const bool ok = e == cudaSuccess && err <= kConvTolerance && window_exact && steps_same;
    char what[256];
    std::snprintf(what, sizeof what,
                  "kda_conv_silu D %d K %d, %d + %d tokens: vs host %.2g (tolerance %.0e), window %s, vs %d conv "
                  "steps %s (%s)",
                  D, K, n1, n2, err, kConvTolerance, window_exact ? "exact" : "DIFFERS", n,
                  steps_same ? "bit-identical" : "DIFFER", cudaGetErrorString(e));
    report(ok, what);
}

// --- The head step: the layer's weights, a prompt's post-conv rows, the host reference.

struct Weights {
    int H, dk;
    bool lower_bound;
    float eps = 1e-5f, lb = -5.0f;
    std::vector<float> dt_bias, ssm_a, ssm_norm;  // [D], [H], [dk]
    cuda::KdaStepShape shape() const { return {H, dk, eps, lower_bound ? 1 : 0, lb}; }
    size_t D() const { return size_t(H) * size_t(dk); }
};

Weights draw_weights(int H, int dk, bool lower_bound) {
    Weights w{};
    w.H = H;
    w.dk = dk;
    w.lower_bound = lower_bound;
    w.dt_bias = normal(w.D(), 0.5f, -1.0f);
    w.ssm_a = normal(size_t(H), 0.3f, -0.5f);  // A_log
    for (float& a : w.ssm_a) a = -std::exp(a);
    w.ssm_norm = normal(size_t(dk), 0.1f, 1.0f);
    return w;
}

struct Tokens {
    int n;
    std::vector<float> q, k, v, z, gate, beta_logit;  // rows of D (beta_logit: of H)
};

Tokens draw_tokens(const Weights& w, int n) {
    const size_t rows = size_t(n) * w.D();
    return {n, normal(rows), normal(rows), normal(rows), normal(rows), normal(rows), normal(size_t(n) * size_t(w.H))};
}

// The host's arithmetic before the recurrence (context_kda.cpp's kda_heads): q and k
// L2-normalized in place (q scaled), g the log decay, beta.
struct Prepared {
    std::vector<float> q, k, g, beta;
};

Prepared host_prepare(const Weights& w, const Tokens& x) {
    Prepared p{x.q, x.k, std::vector<float>(x.q.size()), std::vector<float>(x.beta_logit.size())};
    const int dk = w.dk;
    auto l2 = [&](float* f) {
        double ss = 0.0;
        for (int i = 0; i < dk; ++i) ss += double(f[i]) * f[i];
        const float inv = float(1.0 / std::max(std::sqrt(ss), double(w.eps)));
        for (int i = 0; i < dk; ++i) f[i] *= inv;
    };
    const float q_scale = float(1.0 / std::sqrt(double(dk)));
    for (int t = 0; t < x.n; ++t)
        for (int h = 0; h < w.H; ++h) {
            const size_t at = size_t(t) * w.D() + size_t(h) * size_t(dk);
            l2(&p.q[at]);
            l2(&p.k[at]);
            const float a = w.ssm_a[size_t(h)];
            for (int i = 0; i < dk; ++i) {
                p.q[at + size_t(i)] *= q_scale;
                const float zi = x.z[at + size_t(i)] + w.dt_bias[size_t(h) * size_t(dk) + size_t(i)];
                p.g[at + size_t(i)] = w.lower_bound ? w.lb / (1.0f + std::exp(a * zi))        // lb * sigmoid(-a z)
                                                    : a * (zi > 20.0f ? zi : std::log1p(std::exp(zi)));
            }
            const size_t b = size_t(t) * size_t(w.H) + size_t(h);
            p.beta[b] = 1.0f / (1.0f + std::exp(-x.beta_logit[b]));
        }
    return p;
}

// After it: y = rms_norm(o per head, ssm_norm) * sigmoid(gate).
std::vector<float> host_gate_output(const Weights& w, const std::vector<float>& o, const std::vector<float>& gate) {
    std::vector<float> y(o.size());
    const int dk = w.dk;
    for (size_t at = 0; at < o.size(); at += size_t(dk)) {
        double ss = 0.0;
        for (int j = 0; j < dk; ++j) ss += double(o[at + size_t(j)]) * o[at + size_t(j)];
        const float scale = float(1.0 / std::sqrt(ss / dk + w.eps));
        for (int j = 0; j < dk; ++j)
            y[at + size_t(j)] =
                o[at + size_t(j)] * scale * w.ssm_norm[size_t(j)] / (1.0f + std::exp(-gate[at + size_t(j)]));
    }
    return y;
}

// The host step form over the tokens: y, and S [H][dk][dk] advanced.
std::vector<float> host_step(const Weights& w, const Tokens& x, std::vector<float>& S) {
    const Prepared p = host_prepare(w, x);
    const int dk = w.dk;
    std::vector<float> o(x.q.size());
    for (int t = 0; t < x.n; ++t)
        for (int h = 0; h < w.H; ++h) {
            const size_t at = size_t(t) * w.D() + size_t(h) * size_t(dk);
            exec::kda_step(&S[size_t(h) * size_t(dk) * size_t(dk)], dk, &p.q[at], &p.k[at], &x.v[at], &p.g[at],
                           p.beta[size_t(t) * size_t(w.H) + size_t(h)], &o[at]);
        }
    return host_gate_output(w, o, x.gate);
}

// The device's step form over the tokens: one kda_step_tokens launch, or (by_decode_steps) one
// kda_decode_step call per token. Returns y; S advanced.
std::vector<float> device_step(const Weights& w, const Tokens& x, std::vector<float>& S, bool by_decode_steps,
                               cudaError_t& e) {
    DeviceBuffer q(x.q), k(x.k), v(x.v), z(x.z), gate(x.gate), beta_logit(x.beta_logit), dt(w.dt_bias), a(w.ssm_a),
        norm(w.ssm_norm), state(S), y(std::vector<float>(x.q.size(), NAN));
    const cuda::KdaStepShape s = w.shape();
    if (!by_decode_steps) {
        e = cuda::kda_step_tokens(q.p, k.p, v.p, z.p, dt.p, a.p, beta_logit.p, gate.p, norm.p, state.p, y.p, x.n, s,
                                  nullptr);
    } else {
        e = cudaSuccess;
        for (int t = 0; t < x.n && e == cudaSuccess; ++t) {
            const size_t at = size_t(t) * w.D();
            e = cuda::kda_decode_step(q.p + at, k.p + at, v.p + at, z.p + at, dt.p, a.p,
                                      beta_logit.p + size_t(t) * size_t(w.H), gate.p + at, norm.p, state.p, y.p + at, s,
                                      nullptr);
        }
    }
    e = synchronized(e);
    S = state.get(S.size());
    return y.get(x.q.size());
}

// Tolerance of the device step against the host's, relative to the largest output and the largest
// state entry apart. The device sums in other orders (block trees, fused multiply-adds) and its
// expf/rsqrtf differ from the host's by a few ulp. On the host, this float arithmetic differs
// from the same in double by up to 1.3e-6 (measured: dk 32 to 128, 5 to 100 tokens, both gates);
// the device's own spread is of that size: fifteen times it.
constexpr double kStepTolerance = 2e-5;

void step_check(int H, int dk, int n, bool lower_bound) {
    const Weights w = draw_weights(H, dk, lower_bound);
    const Tokens x = draw_tokens(w, n);
    const auto S0 = normal(size_t(H) * size_t(dk) * size_t(dk), 0.3f);
    std::vector<float> S_host = S0, S_dev = S0, S_dec = S0;
    const auto y_host = host_step(w, x, S_host);
    cudaError_t e1 = cudaSuccess, e2 = cudaSuccess;
    const auto y_dev = device_step(w, x, S_dev, false, e1);
    const auto y_dec = device_step(w, x, S_dec, true, e2);

    const double ey = max_error_over_largest(y_dev, y_host), es = max_error_over_largest(S_dev, S_host);
    const bool ok = e1 == cudaSuccess && ey <= kStepTolerance && es <= kStepTolerance;
    char what[256];
    std::snprintf(what, sizeof what,
                  "kda_step_tokens H %d dk %3d, %3d tokens, %-11s gate: vs host step y %.2g S %.2g (tolerance "
                  "%.0e) (%s)",
                  H, dk, n, lower_bound ? "lower-bound" : "softplus", ey, es, kStepTolerance, cudaGetErrorString(e1));
    report(ok, what);
    const bool same = e2 == cudaSuccess && same_bits(y_dec, y_dev) && same_bits(S_dec, S_dev);
    std::snprintf(what, sizeof what, "kda_step_tokens(%d) vs %d kda_decode_step calls: y and S %s (%s)", n, n,
                  same ? "bit-identical" : "DIFFER", cudaGetErrorString(e2));
    report(e1 == cudaSuccess && same, what);
}

// --- The chunked form with its pre- and post-processing against the step form on the device.

// Tolerance of kda_prepare and kda_gate_output against the host arithmetic, relative to the
// largest value: a block sum against a double sum and a few ulp of sqrtf/rsqrtf/expf.
constexpr double kPrePostTolerance = 1e-5;
// Tolerance of the chunked path against the step path, relative to the largest output and state
// entry apart: on the host, kda_chunk and kda_step with this arithmetic around them agree within
// 3.3e-6 (measured: dk 32 to 128, up to 100 tokens, chunks of 16 and 64, both gates); the device
// runs both in other summation orders: fifteen times that.
constexpr double kChunkTolerance = 5e-5;

void chunk_check(int H, int dk, int n, int chunk, bool lower_bound) {
    const Weights w = draw_weights(H, dk, lower_bound);
    const Tokens x = draw_tokens(w, n);
    const auto S0 = normal(size_t(H) * size_t(dk) * size_t(dk), 0.3f);
    std::vector<float> S_step = S0;
    cudaError_t e = cudaSuccess;
    const auto y_step = device_step(w, x, S_step, false, e);

    const size_t rows = x.q.size();
    DeviceBuffer q(x.q), k(x.k), v(x.v), z(x.z), gate(x.gate), beta_logit(x.beta_logit), dt(w.dt_bias), a(w.ssm_a),
        norm(w.ssm_norm), state(S0), g(std::vector<float>(rows, NAN)),
        beta(std::vector<float>(x.beta_logit.size(), NAN)), o(std::vector<float>(rows, NAN));
    const cuda::KdaStepShape s = w.shape();
    if (e == cudaSuccess)
        e = cuda::kda_prepare(q.p, k.p, z.p, dt.p, a.p, beta_logit.p, n, s, g.p, beta.p, nullptr);
    if (e == cudaSuccess)
        e = cuda::kda_chunk_prefill(q.p, k.p, v.p, g.p, beta.p, state.p, o.p, cuda::KdaChunkShape{H, dk, n, chunk},
                                    nullptr);
    e = synchronized(e);
    const Prepared got{q.get(rows), k.get(rows), g.get(rows), beta.get(x.beta_logit.size())};
    const auto o_chunk = o.get(rows);
    if (e == cudaSuccess)  // y = o in place
        e = synchronized(cuda::kda_gate_output(o.p, gate.p, norm.p, n, s, o.p, nullptr));
    const auto y_chunk = o.get(rows), S_chunk = state.get(S0.size());

    const Prepared want = host_prepare(w, x);
    const double e_pre = std::max({max_error_over_largest(got.q, want.q), max_error_over_largest(got.k, want.k),
                                   max_error_over_largest(got.g, want.g), max_error_over_largest(got.beta, want.beta)});
    const double e_post = max_error_over_largest(y_chunk, host_gate_output(w, o_chunk, x.gate));
    const double ey = max_error_over_largest(y_chunk, y_step), es = max_error_over_largest(S_chunk, S_step);
    const bool ok = e == cudaSuccess && e_pre <= kPrePostTolerance && e_post <= kPrePostTolerance &&
                    ey <= kChunkTolerance && es <= kChunkTolerance;
    char what[320];
    std::snprintf(what, sizeof what,
                  "kda_prepare + kda_chunk_prefill + kda_gate_output H %d dk %3d, %3d tokens, chunk %2d, %-11s gate: "
                  "vs kda_step_tokens y %.2g S %.2g (tolerance %.0e); prepare %.2g, gate output %.2g vs host "
                  "(tolerance %.0e) (%s)",
                  H, dk, n, chunk, lower_bound ? "lower-bound" : "softplus", ey, es, kChunkTolerance, e_pre, e_post,
                  kPrePostTolerance, cudaGetErrorString(e));
    report(ok, what);
}

// Bad shapes and null pointers are refused before any launch; 0 tokens is a no-op (no GPU needed).
void refusals() {
    float f = 0.0f, *p = &f;
    const cuda::KdaStepShape good{2, 64, 1e-5f, 0, -5.0f};
    auto step = [&](cuda::KdaStepShape s, int n, float* null_or_p) {
        return cuda::kda_step_tokens(null_or_p, p, p, p, p, p, p, p, p, p, p, n, s, nullptr);
    };
    auto prepare = [&](cuda::KdaStepShape s, int n, float* null_or_p) {
        return cuda::kda_prepare(p, p, p, p, p, p, n, s, null_or_p, p, nullptr);
    };
    auto output = [&](cuda::KdaStepShape s, int n, float* null_or_p) {
        return cuda::kda_gate_output(p, p, null_or_p, n, s, p, nullptr);
    };
    bool ok = cuda::kda_conv_silu(p, 1, 0, p, 4, p, nullptr) == cudaErrorInvalidValue &&
              cuda::kda_conv_silu(p, 1, 8, p, 0, p, nullptr) == cudaErrorInvalidValue &&
              cuda::kda_conv_silu(p, -1, 8, p, 4, p, nullptr) == cudaErrorInvalidValue &&
              cuda::kda_conv_silu(p, 1, 8, p, 4, nullptr, nullptr) == cudaErrorInvalidValue &&
              cuda::kda_conv_silu(p, 0, 8, p, 4, p, nullptr) == cudaSuccess;
    auto refuses = [&](auto& fn) {
        cuda::KdaStepShape no_heads = good, narrow = good, ragged = good, wide = good;
        no_heads.n_head = 0;
        narrow.head_dim = 16;
        ragged.head_dim = 48;
        wide.head_dim = 2048;
        return fn(no_heads, 1, p) == cudaErrorInvalidValue && fn(narrow, 1, p) == cudaErrorInvalidValue &&
               fn(ragged, 1, p) == cudaErrorInvalidValue && fn(wide, 1, p) == cudaErrorInvalidValue &&
               fn(good, -1, p) == cudaErrorInvalidValue && fn(good, 1, nullptr) == cudaErrorInvalidValue &&
               fn(good, 0, p) == cudaSuccess;
    };
    ok = ok && refuses(step) && refuses(prepare) && refuses(output);
    cuda::KdaStepShape many_heads = good;
    many_heads.n_head = 1 << 20;
    ok = ok && prepare(many_heads, 1 << 12, p) == cudaErrorInvalidValue &&
         output(many_heads, 1 << 12, p) == cudaErrorInvalidValue;
    report(ok, "kda kernels refuse bad shapes, null pointers and grids past the limit; 0 tokens is a no-op");
}

}  // namespace

int main() {
    refusals();
    if (cuda_test::failures) return cuda_test::finish("cuda kda tests");
    if (const int skip = cuda_test::start("cuda kda tests")) return skip;
    conv_and_decode_check(false);
    conv_and_decode_check(true);
    conv_check(300, 4, 3, 4);  // a ragged block of channels
    if (cuda_test::small_sizes()) {  // under compute-sanitizer: several chunks and a ragged last one
        step_check(2, 64, 5, true);
        chunk_check(2, 64, 40, 16, false);
        return cuda_test::finish("cuda kda tests");
    }
    conv_check(4096, 4, 3, 4);
    for (int dk : {64, 128})
        for (bool lower_bound : {false, true}) step_check(3, dk, 9, lower_bound);
    step_check(2, 32, 20, false);
    for (int dk : {64, 128})
        for (int chunk : {16, 64})
            for (bool lower_bound : {false, true}) chunk_check(3, dk, 100, chunk, lower_bound);
    return cuda_test::finish("cuda kda tests");
}
