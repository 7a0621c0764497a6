// The KDA decode kernels against the host: the conv step against a direct host loop, the head
// step against lib/exec/kda_recurrence.hpp's kda_step with the same L2 norms, decay, norm and
// gate written out on the host, on fresh random data over several tokens (the state carried on
// the device), both gate forms. Exit 77 (ctest: skipped) with a printed reason without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "exec/kda_recurrence.hpp"
#include "cuda_test_util.cuh"
#include "kda.cuh"

using namespace strata;
using cuda_test::download;
using cuda_test::normal;
using cuda_test::rng;
using cuda_test::upload;

namespace {

int failures = 0;

void run(bool lower_bound) {
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
    const bool ok = e == cudaSuccess && err < 1e-4;
    failures += !ok;
    std::printf("%s kda conv + decode step, %s gate, 5 tokens: max err %.3g (tolerance 1e-4) (%s)\n", ok ? "PASS" : "FAIL",
                lower_bound ? "lower-bound" : "softplus", err, cudaGetErrorString(e));
}

}  // namespace

int main() {
    if (const int skip = cuda_test::start("cuda kda tests")) return skip;
    run(false);
    run(true);
    return failures ? 1 : 0;
}
