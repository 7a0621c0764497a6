// The kernel benchmark's Kimi Delta Attention rows, heads of dk 128 (Kimi-Linear: 32; K3-like: 96):
//   kda_step_tokens, decode (m 1; kda.cuh): GB/s of the state read and written once
//   (2 * H * dk * dk * 4 bytes) plus the token's inputs and output, against the streaming read;
//   the state rotates over copies (every layer keeps its own), so each launch reads it from DRAM;
//   kda_chunk_prefill (chunk 64, kda_chunk.cuh) on 512 tokens: TFLOP/s of the chunked algorithm
//   against the best cuBLAS rate, with tokens/s and the state and input bytes beside it.
// Inputs are fresh random values shaped as the kernels expect them (negative ssm_a, decays
// below 1, normalized q and k for the chunked form); the states start random and the decay keeps
// them bounded over the repeated launches. Host code (C++20). UNTESTED ON A GPU until a device
// check has run it.
#include <cmath>
#include <string>
#include <vector>

#include "runtime/cuda_error.hpp"
#include "kernels/kda/kda.cuh"
#include "kernels/kda/kda_chunk.cuh"
#include "kernel_bench_suite.hpp"

namespace strata::cuda::kernel_suite {

namespace {

constexpr int kHeadDim = 128;
constexpr int kPrefillTokens = 512;

DeviceBuffer upload_floats(const std::vector<float>& host) {
    DeviceBuffer d(host.size() * sizeof(float));
    bench::upload(d, 0, host.data(), d.bytes());
    return d;
}

// n values uniform in [lo, hi) (lo > 0 or hi < 0: never zero).
std::vector<float> uniform_floats(size_t n, float lo, float hi, bench::FastRng& rng) {
    std::vector<float> v(n);
    for (auto& x : v) x = rng.uniform(lo, hi);
    return v;
}

// Each dk-wide row scaled to unit length, then by `scale` (the chunked form's q and k).
void normalize_rows(std::vector<float>& v, int dk, float scale) {
    for (size_t r = 0; r + size_t(dk) <= v.size(); r += size_t(dk)) {
        double ss = 0;
        for (int i = 0; i < dk; ++i) ss += double(v[r + size_t(i)]) * v[r + size_t(i)];
        const float f = scale / float(std::sqrt(std::max(ss, 1e-30)));
        for (int i = 0; i < dk; ++i) v[r + size_t(i)] *= f;
    }
}

}  // namespace

void Suite::kda_rows() {
    for (int H : {32, 96}) {
        const std::string name = "kda_step_tokens decode tokens=1 heads=" + std::to_string(H) + " dk=128";
        if (!wanted(name) || lost_) continue;
        guarded(name, [&] {
            const size_t D = size_t(H) * kHeadDim;
            const uint64_t state_bytes = uint64_t(H) * kHeadDim * kHeadDim * sizeof(float);
            const std::vector<float> state_host = bench::random_floats(state_bytes / sizeof(float), rng_);
            const Replicas state = replicated(state_host.data(), state_bytes);
            const DeviceBuffer q = upload_floats(bench::random_floats(D, rng_));
            const DeviceBuffer k = upload_floats(bench::random_floats(D, rng_));
            const DeviceBuffer v = upload_floats(bench::random_floats(D, rng_));
            const DeviceBuffer z = upload_floats(bench::random_floats(D, rng_));
            const DeviceBuffer dt_bias = upload_floats(bench::random_floats(D, rng_));
            const DeviceBuffer gate = upload_floats(bench::random_floats(D, rng_));
            const DeviceBuffer ssm_a = upload_floats(uniform_floats(size_t(H), -1.5f, -0.05f, rng_));
            const DeviceBuffer beta_logit = upload_floats(bench::random_floats(size_t(H), rng_));
            const DeviceBuffer ssm_norm = upload_floats(uniform_floats(kHeadDim, 0.5f, 1.5f, rng_));
            DeviceBuffer y(D * sizeof(float));
            const KdaStepShape s{.n_head = H, .head_dim = kHeadDim, .eps = 1e-6f, .lower_bound_gate = 0,
                                 .gate_lower_bound = 0.0f};
            bench::poison(y.get(), y.bytes(), stream_);
            const Timing t = time("kda_step_tokens", [&](int64_t i) {
                return kda_step_tokens(q.get<float>(), k.get<float>(), v.get<float>(), z.get<float>(),
                                       dt_bias.get<float>(), ssm_a.get<float>(), beta_logit.get<float>(),
                                       gate.get<float>(), ssm_norm.get<float>(), state.at<float>(i), y.get<float>(), 1,
                                       s, stream_);
            });
            // q, k, v, z, gate, dt_bias read and y written ([D] each), ssm_a and beta_logit ([H]), ssm_norm.
            const uint64_t io_bytes = (7 * D + 2 * size_t(H) + kHeadDim) * sizeof(float);
            json row = bandwidth_row(name, "kda", t, double(2 * state_bytes + io_bytes),
                                     "the state read and written once (2 * H * dk * dk * 4) plus the token's inputs "
                                     "and output");
            row["kernel"] = "kda_step_tokens";
            row["n_head"] = H;
            row["head_dim"] = kHeadDim;
            row["tokens"] = 1;
            row["state_bytes"] = double(state_bytes);
            row["io_bytes"] = double(io_bytes);
            row["state_copies_rotated"] = state.copies;
            row["output_finite"] = bench::all_finite(y.get<float>(), D);
            add(std::move(row));
        });
    }

    const int H = 32, T = kPrefillTokens, C = kKdaChunkTokens;
    const std::string name = "kda_chunk_prefill tokens=512 chunk=64 heads=32 dk=128";
    if (!wanted(name) || lost_) return;
    guarded(name, [&] {
        const size_t n = size_t(T) * size_t(H) * kHeadDim;
        std::vector<float> q_host = bench::random_floats(n, rng_), k_host = bench::random_floats(n, rng_);
        normalize_rows(q_host, kHeadDim, 1.0f / std::sqrt(float(kHeadDim)));
        normalize_rows(k_host, kHeadDim, 1.0f);
        const DeviceBuffer q = upload_floats(q_host), k = upload_floats(k_host);
        const DeviceBuffer v = upload_floats(bench::random_floats(n, rng_));
        const DeviceBuffer g = upload_floats(uniform_floats(n, -0.3f, -0.001f, rng_));  // log decays < 0
        const DeviceBuffer beta = upload_floats(uniform_floats(size_t(T) * size_t(H), 0.05f, 0.95f, rng_));
        const uint64_t state_bytes = uint64_t(H) * kHeadDim * kHeadDim * sizeof(float);
        const DeviceBuffer state = upload_floats(bench::random_floats(state_bytes / sizeof(float), rng_));
        DeviceBuffer o(n * sizeof(float));
        const KdaChunkShape s{.n_head = H, .head_dim = kHeadDim, .n_tokens = T, .chunk = C};
        bench::poison(o.get(), o.bytes(), stream_);
        const Timing t = time("kda_chunk_prefill", [&](int64_t) {
            return kda_chunk_prefill(q.get<float>(), k.get<float>(), v.get<float>(), g.get<float>(), beta.get<float>(),
                                     state.get<float>(), o.get<float>(), s, stream_);
        });
        // Per head and chunk of c tokens: (e^G k)^T S0 and (e^G q)^T S0 and the state update, 2 c dk^2 each;
        // L and Aqk, 2 c(c+1) dk; the forward substitution, c(c-1) dk; Aqk V', c(c+1) dk.
        double flops = 0;
        for (int t0 = 0; t0 < T; t0 += C) {
            const double c = std::min(C, T - t0), dk = kHeadDim;
            flops += H * (6 * c * dk * dk + (2 * c * (c + 1) + c * (c - 1) + c * (c + 1)) * dk);
        }
        json row =
            flops_row(name, "kda", t, flops, best_cublas_tflops_, "the best cuBLAS f16 GEMM rate of this run", 0);
        row["kernel"] = "kda_chunk_prefill";
        row["n_head"] = H;
        row["head_dim"] = kHeadDim;
        row["tokens"] = T;
        row["chunk"] = C;
        row["flops_counted"] =
            "the chunked algorithm's multiply-adds counted once per head (6 c dk^2 + (4c^2 + 2c) dk a chunk); the "
            "kernel recomputes L and Aqk in each of a head's dk/32 column blocks, and exponentials are not counted";
        row["tokens_per_s"] = t.median_s > 0 ? T / t.median_s : 0.0;
        row["state_bytes"] = double(state_bytes);
        row["state_bytes_moved"] = double(2 * state_bytes);
        row["input_output_bytes"] = double((5 * n + size_t(T) * size_t(H)) * sizeof(float));
        row["output_finite"] = bench::all_finite(o.get<float>(), n);
        add(std::move(row));
    });
}

}  // namespace strata::cuda::kernel_suite
