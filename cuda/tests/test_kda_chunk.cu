// The chunked KDA prefill (kda_chunk.cuh) against the host recurrence (lib/exec/kda/kda_recurrence.hpp):
// on fresh random data (a random initial state, L2-normalized q and k, log decays from the
// softplus gate at a weak and a moderate scale and from K3's lower-bound gate), for 1, 7, 64,
// 100 and 300 tokens (ragged chunk tails), 2 and 3 heads, dk 64 and 128 (and 32, 96), every
// prompt split into two calls so that the state carries across calls as well as chunks. The
// GPU's outputs and final state are compared with kda_chunk run on the same chunks and with
// kda_step token by token; outputs are NaN-poisoned before each call. Bad shapes are refused
// before any launch (checked here even without a GPU). Exit 77 (ctest: skipped) without a GPU;
// STRATA_CUDA_TEST_SMALL=1 (the compute-sanitizer run) keeps two small cases.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda_test_util.cuh"
#include "error_metrics.hpp"
#include "exec/kda/kda_recurrence.hpp"
#include "kernels/kda/kda_chunk.cuh"

using namespace strata;
using namespace strata::cuda_test;  // the test programs' helpers

namespace {

// Tolerance, relative to the largest magnitude of the reference (outputs and state apart). On the
// host, kda_chunk and kda_step agree within 1.8e-6 of it over these shapes (measured: dk 64 and
// 128, 1 to 300 tokens, chunk 64); the GPU sums in other orders (warp trees, fused multiply-adds)
// and its expf differs from the host's by up to 2 ulp: ten times the host's spread.
constexpr double kRelTolerance = 2e-5;

enum class Decay { weak, moderate, lower_bound };
const char* decay_name(Decay d) {
    return d == Decay::weak ? "weak softplus" : d == Decay::moderate ? "softplus" : "K3 lower-bound";
}

struct Case {
    int n_head, head_dim, n_tokens, chunk;
    Decay decay;
};

void run(const Case& c) {
    const int H = c.n_head, dk = c.head_dim, T = c.n_tokens;
    const size_t row = size_t(H) * size_t(dk), n = size_t(T) * row;
    std::vector<float> q = normal(n), k = normal(n), v = normal(n), z = normal(n), g(n), beta(size_t(T) * size_t(H));
    for (int t = 0; t < T; ++t)
        for (int h = 0; h < H; ++h) {
            float* qh = &q[size_t(t) * row + size_t(h) * size_t(dk)];
            float* kh = &k[size_t(t) * row + size_t(h) * size_t(dk)];
            double sq = 0.0, sk = 0.0;
            for (int i = 0; i < dk; ++i) {
                sq += double(qh[i]) * qh[i];
                sk += double(kh[i]) * kh[i];
            }
            for (int i = 0; i < dk; ++i) {
                qh[i] = float(qh[i] / std::sqrt(sq) / std::sqrt(double(dk)));
                kh[i] = float(kh[i] / std::sqrt(sk));
            }
        }
    const std::vector<float> a = normal(size_t(H), 0.3f, 0.0f);  // A_log per head
    for (size_t i = 0; i < n; ++i) {
        const size_t h = (i / size_t(dk)) % size_t(H);
        const float ea = std::exp(a[h]);  // -ssm_a
        const float softplus = z[i] > 20.0f ? z[i] : std::log1p(std::exp(z[i]));
        switch (c.decay) {
        case Decay::weak: g[i] = -0.05f * ea * softplus; break;
        case Decay::moderate: g[i] = -ea * softplus; break;
        case Decay::lower_bound: g[i] = -5.0f / (1.0f + std::exp(-ea * z[i])); break;  // lb * sigmoid(exp(A_log) z)
        }
    }
    for (auto& b : beta) b = 1.0f / (1.0f + std::exp(-normal(1)[0]));
    const std::vector<float> S0 = normal(size_t(H) * size_t(dk) * size_t(dk), 0.3f);

    // Two calls: [0, T1) then [T1, T); the host runs kda_chunk on the same chunks.
    const int T1 = T > 1 ? T / 3 + 1 : T;
    std::vector<float> o_chunk(n), o_step(n), S_chunk = S0, S_step = S0, work;
    for (int h = 0; h < H; ++h) {
        std::vector<float> qh(size_t(T) * size_t(dk)), kh(qh.size()), vh(qh.size()), gh(qh.size()), oc(qh.size()),
            os(qh.size()), bh(static_cast<size_t>(T));
        for (int t = 0; t < T; ++t) {
            const size_t src = size_t(t) * row + size_t(h) * size_t(dk), dst = size_t(t) * size_t(dk);
            std::copy_n(&q[src], dk, &qh[dst]);
            std::copy_n(&k[src], dk, &kh[dst]);
            std::copy_n(&v[src], dk, &vh[dst]);
            std::copy_n(&g[src], dk, &gh[dst]);
            bh[size_t(t)] = beta[size_t(t) * size_t(H) + size_t(h)];
        }
        float* Sc = &S_chunk[size_t(h) * size_t(dk) * size_t(dk)];
        float* Ss = &S_step[size_t(h) * size_t(dk) * size_t(dk)];
        for (int call = 0; call < 2; ++call) {
            const int begin = call == 0 ? 0 : T1, end = call == 0 ? T1 : T;
            for (int t0 = begin; t0 < end; t0 += c.chunk) {
                const int m = std::min(c.chunk, end - t0);
                const size_t off = size_t(t0) * size_t(dk);
                exec::kda_chunk(Sc, dk, m, &qh[off], &kh[off], &vh[off], &gh[off], &bh[size_t(t0)], &oc[off], work);
            }
        }
        for (int t = 0; t < T; ++t) {
            const size_t off = size_t(t) * size_t(dk);
            exec::kda_step(Ss, dk, &qh[off], &kh[off], &vh[off], &gh[off], bh[size_t(t)], &os[off]);
        }
        for (int t = 0; t < T; ++t) {
            std::copy_n(&oc[size_t(t) * size_t(dk)], dk, &o_chunk[size_t(t) * row + size_t(h) * size_t(dk)]);
            std::copy_n(&os[size_t(t) * size_t(dk)], dk, &o_step[size_t(t) * row + size_t(h) * size_t(dk)]);
        }
    }

    float* d_q = upload(q);
    float* d_k = upload(k);
    float* d_v = upload(v);
    float* d_g = upload(g);
    float* d_b = upload(beta);
    float* d_S = upload(S0);
    float* d_o = upload(std::vector<float>(n, NAN));
    cudaError_t e = cudaSuccess;
    for (int call = 0; call < 2 && e == cudaSuccess; ++call) {
        const int begin = call == 0 ? 0 : T1, end = call == 0 ? T1 : T;
        const size_t off = size_t(begin) * row;
        const cuda::KdaChunkShape shape{H, dk, end - begin, c.chunk};
        e = cuda::kda_chunk_prefill(d_q + off, d_k + off, d_v + off, d_g + off, d_b + size_t(begin) * size_t(H), d_S,
                                    d_o + off, shape, nullptr);
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    const auto o = download(d_o, n);
    const auto S = download(d_S, S0.size());
    for (float* p : {d_q, d_k, d_v, d_g, d_b, d_S, d_o}) cudaFree(p);

    const double eo_chunk = max_error_over_largest(o, o_chunk), es_chunk = max_error_over_largest(S, S_chunk);
    const double eo_step = max_error_over_largest(o, o_step), es_step = max_error_over_largest(S, S_step);
    const double host = std::max(max_error_over_largest(o_chunk, o_step), max_error_over_largest(S_chunk, S_step));
    const bool ok = e == cudaSuccess && std::max({eo_chunk, es_chunk, eo_step, es_step}) <= kRelTolerance;
    char what[256];
    std::snprintf(what, sizeof what,
                  "H %d dk %3d T %3d (calls %d + %d) chunk %2d %-14s: vs kda_chunk o %.2g S %.2g; vs kda_step o %.2g "
                  "S %.2g; host chunk vs step %.2g (tolerance %.0e) (%s)",
                  H, dk, T, T1, T - T1, c.chunk, decay_name(c.decay), eo_chunk, es_chunk, eo_step, es_step, host,
                  kRelTolerance, cudaGetErrorString(e));
    report(ok, what);
}

// Bad shapes and null pointers are refused before any launch (no GPU needed).
void refusals() {
    float x = 0.0f;
    auto refused = [&](cuda::KdaChunkShape s, bool null_input = false) {
        return cuda::kda_chunk_prefill(null_input ? nullptr : &x, &x, &x, &x, &x, &x, &x, s, nullptr) ==
               cudaErrorInvalidValue;
    };
    const bool ok = refused({0, 128, 4, 64}) && refused({2, 48, 4, 64}) && refused({2, 16, 4, 64}) &&
                    refused({2, 160, 4, 64}) && refused({2, 128, -1, 64}) && refused({2, 128, 4, 0}) &&
                    refused({2, 128, 4, 65}) && refused({70000, 128, 4, 64}) && refused({2, 128, 4, 64}, true) &&
                    cuda::kda_chunk_prefill(&x, &x, &x, &x, &x, &x, &x, {2, 128, 0, 64}, nullptr) == cudaSuccess &&
                    cuda::kda_chunk_shared_bytes(128, 64) == 164096;
    report(ok, "kda_chunk_prefill refuses bad shapes and null pointers; 0 tokens is a no-op");
}

}  // namespace

int main() {
    refusals();
    if (cuda_test::failures) return cuda_test::finish("cuda kda chunk tests");
    if (const int skip = cuda_test::start("cuda kda chunk tests")) return skip;
    if (cuda_test::small_sizes()) {  // under compute-sanitizer: ragged tails, two chunks, both widths
        run({2, 128, 100, cuda::kKdaChunkTokens, Decay::moderate});
        run({3, 32, 45, 16, Decay::lower_bound});
        return cuda_test::finish("cuda kda chunk tests");
    }
    const Decay decays[] = {Decay::weak, Decay::moderate, Decay::lower_bound};
    int i = 0;
    for (int dk : {64, 128})
        for (int T : {1, 7, 64, 100, 300}) {
            run({2 + i % 2, dk, T, cuda::kKdaChunkTokens, decays[i % 3]});
            ++i;
        }
    run({3, 32, 45, 16, Decay::moderate});      // a smaller chunk, ragged
    run({2, 96, 130, 64, Decay::lower_bound});  // three column tiles
    run({2, 128, 200, 1, Decay::weak});         // chunks of one token: the step form, batched
    return cuda_test::finish("cuda kda chunk tests");
}
