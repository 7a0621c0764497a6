// The kernel benchmark's multi-head latent attention rows (mla_attention.cuh) on Kimi K2/K3 shapes:
// 64 heads, latent C 512, rope key R 64 (queries of 128 + 64), an f16 latent cache.
//   decode (m 1) at n_past 4096 and 32768: GB/s of the cache's unique bytes against the
//   streaming read. The kernel runs one block per head and every block reads the whole cache, so
//   the bytes requested are H times the unique bytes; only the first read of a row must come from
//   DRAM while the cache fits in L2 (the other heads' reads hit it), which is why the ratio uses
//   the unique bytes. Both are reported; the caches rotate over copies like the KV caches.
//   prefill (m 512 at n_past 0): TFLOP/s of the causal triangle against the best cuBLAS rate.
// Host code (C++20). UNTESTED ON A GPU until a device check has run it.
#include <cmath>
#include <string>
#include <vector>

#include <cuda_fp16.h>

#include "runtime/cuda_error.hpp"
#include "kernel_bench_suite.hpp"
#include "kernels/attention/mla_attention.cuh"

namespace strata::cuda::kernel_suite {

namespace {

constexpr int kHeads = 64, kLatent = 512, kRope = 64, kNope = 128;
constexpr int kRowHalves = kLatent + kRope;

MlaAttentionShape mla_shape(int n_tokens) {
    return MlaAttentionShape{.n_head = kHeads,
                             .kv_lora = kLatent,
                             .n_rot = kRope,
                             .n_tokens = n_tokens,
                             .q_stride = kHeads * (kNope + kRope),
                             .q_head_stride = kNope + kRope,
                             .q_pe_offset = kNope,
                             .scale = 1.0f / std::sqrt(float(kNope + kRope))};
}

// The queries of m tokens: q_abs [H][m][C] and q [m][H * (nope + R)], fresh random values.
struct MlaQueries {
    DeviceBuffer q_abs, q, o_lat;
    MlaQueries(int m, bench::FastRng& rng) {
        const MlaAttentionShape s = mla_shape(m);
        const std::vector<float> a = bench::random_floats(size_t(kHeads) * size_t(m) * kLatent, rng);
        const std::vector<float> b = bench::random_floats(size_t(m) * size_t(s.q_stride), rng);
        q_abs = DeviceBuffer(a.size() * sizeof(float));
        q = DeviceBuffer(b.size() * sizeof(float));
        o_lat = DeviceBuffer(a.size() * sizeof(float));
        bench::upload(q_abs, 0, a.data(), q_abs.bytes());
        bench::upload(q, 0, b.data(), q.bytes());
    }
};

}  // namespace

void Suite::mla_rows() {
    const std::string heads = " (64 heads, C 512, R 64, f16 latent cache)";
    for (int64_t n_past : {int64_t(4096), int64_t(32768)}) {
        const std::string name = "mla_attention decode n_past=" + std::to_string(n_past) + heads;
        if (!wanted(name) || lost_) continue;
        guarded(name, [&] {
            const int64_t n_kv = n_past + 1;  // the new token's row is stored before it attends
            const uint64_t unique = uint64_t(n_kv) * kRowHalves * sizeof(__half);
            const std::vector<uint16_t> rows = bench::random_halves(size_t(n_kv) * kRowHalves, rng_);
            const Replicas cache = replicated(rows.data(), unique);
            const int32_t pos_host = int32_t(n_past);
            DeviceBuffer pos(sizeof(int32_t));
            bench::upload(pos, 0, &pos_host, sizeof pos_host);
            MlaQueries qs(1, rng_);
            const MlaAttentionShape s = mla_shape(1);
            bench::poison(qs.o_lat.get(), qs.o_lat.bytes(), stream_);
            const Timing t = time("mla_attention decode", [&](int64_t k) {
                return mla_attention(qs.q_abs.get<float>(), qs.q.get<float>(), cache.at<__half>(k), pos.get<int32_t>(),
                                     s, qs.o_lat.get<float>(), stream_);
            });
            json row = bandwidth_row(name, "mla", t, double(unique),
                                     "unique bytes: every cached f16 row (C + R halves) once; each of the H head "
                                     "blocks reads the whole cache (bytes_requested), the repeats served by L2 only "
                                     "while the cache fits in it; queries and output not counted");
            row["kernel"] = "mla_attention";
            row["n_head"] = kHeads;
            row["kv_lora"] = kLatent;
            row["n_rot"] = kRope;
            row["tokens"] = 1;
            row["n_past"] = n_past;
            row["positions_read"] = n_kv;
            row["bytes_unique"] = double(unique);
            row["bytes_requested"] = double(unique) * kHeads;
            row["ratio_uses"] = "bytes_unique";
            row["cache_fits_l2"] = unique <= l2_bytes_;
            row["cache_copies_rotated"] = cache.copies;
            row["output_finite"] = bench::all_finite(qs.o_lat.get<float>(), size_t(kHeads) * kLatent);
            add(std::move(row));
        });
    }

    const int m = 512;
    const std::string name = "mla_attention prefill tokens=512 n_past=0" + heads;
    if (!wanted(name) || lost_) return;
    guarded(name, [&] {
        const std::vector<uint16_t> rows = bench::random_halves(size_t(m) * kRowHalves, rng_);
        DeviceBuffer cache(rows.size() * sizeof(uint16_t));
        bench::upload(cache, 0, rows.data(), cache.bytes());
        const int32_t zero = 0;
        DeviceBuffer pos(sizeof(int32_t));
        bench::upload(pos, 0, &zero, sizeof zero);
        MlaQueries qs(m, rng_);
        const MlaAttentionShape s = mla_shape(m);
        bench::poison(qs.o_lat.get(), qs.o_lat.bytes(), stream_);
        const Timing t = time("mla_attention prefill", [&](int64_t) {
            return mla_attention(qs.q_abs.get<float>(), qs.q.get<float>(), cache.get<__half>(), pos.get<int32_t>(), s,
                                 qs.o_lat.get<float>(), stream_);
        });
        // Causal: token i sees i + 1 positions; a score is 2 (C + R) flops, the mix 2 C.
        const double flops = 2.0 * (2 * kLatent + kRope) * kHeads * (double(m) * (m + 1) / 2);
        json row =
            flops_row(name, "mla", t, flops, best_cublas_tflops_, "the best cuBLAS f16 GEMM rate of this run", 0);
        row["kernel"] = "mla_attention";
        row["n_head"] = kHeads;
        row["kv_lora"] = kLatent;
        row["n_rot"] = kRope;
        row["tokens"] = m;
        row["n_past"] = 0;
        row["flops_counted"] = "2 * (2C + R) * H * m(m+1)/2: q.k over C + R and p.latent over C, causal triangle only";
        row["output_finite"] = bench::all_finite(qs.o_lat.get<float>(), size_t(kHeads) * size_t(m) * kLatent);
        add(std::move(row));
    });
}

}  // namespace strata::cuda::kernel_suite
