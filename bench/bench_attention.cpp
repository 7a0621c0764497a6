// Decode attention benchmark: one new token attending to n_keys cached positions in every layer of
// a stack of layers (so that the cache is read from memory, as in decode of a whole model, not
// from a warm L2), timed for
//   old     the code the attention kernels replaced: per key and head, the row decoded to float32
//           (KvCache::load_k / load_v; latent: LatentCache::load of all rows first), then scalar
//           dot products and a scalar softmax (reproduced here for the comparison);
//   scalar  the attention kernels' portable form (lib/exec/attention/attention_cpu.hpp);
//   best    their best form on this CPU (AVX-512 or AVX2);
// on 1 and 2 threads, for the llama-1b shape (32 query heads over 8 KV heads of 64) and Kimi K2's
// latent attention (64 heads over one latent row of 512 + 64). Prints ns per (token, head) and the
// rate at which the cache was read (bytes of K and V, or latent rows, per second), beside the
// machine's memory-read bandwidth measured in the same run. Median (min) over --reps.
//
//   bench_attention [--keys 512,4096] [--reps 9] [--threads 1,2] [--stream-mib 192] [--bw-mib 512]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "exec/attention/attention_cpu.hpp"
#include "exec/cpu_backend.hpp"
#include "exec/attention/kv_cache.hpp"
#include "exec/attention/latent_cache.hpp"
#include "exec/ops.hpp"
#include "quant/dot/gemv.hpp"
#include "util/cpu_features.hpp"

using namespace strata;
namespace attn = exec::attn;

namespace {

std::vector<float> random_floats(std::mt19937_64& rng, int64_t n) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = nd(rng);
    return v;
}

attn::RowType row_type(exec::KvType t) { return t == exec::KvType::q8_0 ? attn::RowType::q8_0 : attn::RowType::f16; }

struct Case {
    const char* method;  // old, scalar, best
    int threads;
};

void report(const char* shape, const char* type, int64_t keys, const Case& c, const bench::Stats& st, int64_t layers,
            int64_t heads, double cache_bytes, double bw_gbps) {
    const double per_layer = st.median_ns / double(layers);
    const double gbps = cache_bytes / per_layer;
    std::printf("%-8s %-5s %5lld  %-6s %d   %10.1f  (%8.1f)   %8.1f   %6.2f   %4.0f%%\n", shape, type, (long long)keys,
                c.method, c.threads, per_layer / double(heads), st.min_ns / double(layers) / double(heads),
                per_layer / 1e3, gbps, 100.0 * gbps / bw_gbps);
}

// llama-1b: H query heads, KV heads of D.
void bench_gqa(exec::KvType type, int64_t keys, const std::vector<Case>& cases, int reps, int64_t stream_mib,
               const std::vector<double>& bw) {
    const int64_t H = 32, KV = 8, D = 64, G = H / KV;
    const uint64_t layer_bytes = 2 * uint64_t(keys) * exec::kv_row_bytes(type, KV, D);
    const int64_t layers = std::max<int64_t>(2, int64_t((uint64_t(stream_mib) << 20) / layer_bytes));
    exec::KvCache kv(type, layers, keys, KV, D);
    std::mt19937_64 rng(7);
    for (int64_t il = 0; il < layers; ++il)
        for (int64_t p = 0; p < keys; ++p) {
            const auto k = random_floats(rng, KV * D), v = random_floats(rng, KV * D);
            kv.store(il, p, k.data(), v.data());
        }
    const auto q = random_floats(rng, H * D);
    std::vector<float> out(static_cast<size_t>(H * D));
    const float scale = 1.0f / std::sqrt(float(D));
    for (const Case& c : cases) {
        exec::CpuBackend be(c.threads);
        std::function<void()> run;
        if (std::string(c.method) == "old") {
            run = [&] {
                for (int64_t il = 0; il < layers; ++il)
                    be.parallel_for(H, [&](int64_t b, int64_t e) {
                        std::vector<float> scores(static_cast<size_t>(keys)), row(static_cast<size_t>(D));
                        for (int64_t h = b; h < e; ++h) {
                            const float* qh = q.data() + h * D;
                            for (int64_t p = 0; p < keys; ++p) {
                                kv.load_k(il, p, h / G, row.data());
                                float dot = 0.0f;
                                for (int64_t d = 0; d < D; ++d) dot += qh[d] * row[size_t(d)];
                                scores[size_t(p)] = dot * scale;
                            }
                            exec::softmax(scores.data(), keys);
                            float* o = out.data() + h * D;
                            std::fill(o, o + D, 0.0f);
                            for (int64_t p = 0; p < keys; ++p) {
                                kv.load_v(il, p, h / G, row.data());
                                for (int64_t d = 0; d < D; ++d) o[d] += scores[size_t(p)] * row[size_t(d)];
                            }
                        }
                    });
            };
        } else {
            const attn::Kernel k = std::string(c.method) == "scalar" ? attn::Kernel::scalar : attn::Kernel::best;
            run = [&, k] {
                for (int64_t il = 0; il < layers; ++il)
                    attn::attend(be, KV, [&](int64_t kvh) {
                        attn::Group g;
                        g.q_a = q.data() + kvh * G * D;
                        g.q_a_stride = g.out_stride = D;
                        g.dk_a = g.dk = g.dv = D;
                        g.n_rows = G;
                        g.n_keys = keys;
                        g.k = {kv.k_head(il, 0, kvh), kv.row_bytes(), row_type(type)};
                        g.v = {kv.v_head(il, 0, kvh), kv.row_bytes(), row_type(type)};
                        g.scale = scale;
                        g.out = out.data() + kvh * G * D;
                        return g;
                    }, k);
            };
        }
        const bench::Stats st = bench::time_it(std::string(c.method) == "old" ? std::max(3, reps / 3) : reps, run);
        report("gqa-1b", exec::kv_type_name(type), keys, c, st, layers, H, double(layer_bytes),
               bw[size_t(c.threads - 1)]);
    }
}

// Kimi K2's latent attention: H heads over rows of C latent + R rope values.
void bench_mla(exec::KvType type, int64_t keys, const std::vector<Case>& cases, int reps, int64_t stream_mib,
               const std::vector<double>& bw) {
    const int64_t H = 64, C = 512, R = 64, W = C + R;
    const uint64_t layer_bytes = uint64_t(keys) * exec::latent_row_bytes(type, C, R);
    const int64_t layers = std::max<int64_t>(2, int64_t((uint64_t(stream_mib) << 20) / layer_bytes));
    exec::LatentCache lc(type, layers, keys, C, R);
    std::mt19937_64 rng(8);
    for (int64_t il = 0; il < layers; ++il)
        for (int64_t p = 0; p < keys; ++p) lc.store(il, p, random_floats(rng, W).data());
    const auto qa = random_floats(rng, H * C), qpe = random_floats(rng, H * R);
    std::vector<float> out(static_cast<size_t>(H * C)), latent;
    const float scale = 1.0f / std::sqrt(float(128 + R));
    for (const Case& c : cases) {
        exec::CpuBackend be(c.threads);
        std::function<void()> run;
        if (std::string(c.method) == "old") {
            latent.resize(static_cast<size_t>(keys * W));
            const bool avx2 = util::has_avx2_kernels();
            auto dot = [avx2](const float* a, const float* b, int64_t n) {
                return avx2 ? quant::dot_f32_avx2(a, b, n) : quant::dot_f32_scalar(a, b, n);
            };
            run = [&, dot] {
                for (int64_t il = 0; il < layers; ++il) {
                    lc.load(il, 0, keys, latent.data());
                    be.parallel_for(H, [&](int64_t b, int64_t e) {
                        std::vector<float> scores(static_cast<size_t>(keys));
                        for (int64_t h = b; h < e; ++h) {
                            for (int64_t p = 0; p < keys; ++p) {
                                const float* key = latent.data() + p * W;
                                scores[size_t(p)] =
                                    (dot(qa.data() + h * C, key, C) + dot(qpe.data() + h * R, key + C, R)) * scale;
                            }
                            exec::softmax(scores.data(), keys);
                            float* o = out.data() + h * C;
                            std::fill(o, o + C, 0.0f);
                            for (int64_t p = 0; p < keys; ++p)
                                for (int64_t i = 0; i < C; ++i) o[i] += scores[size_t(p)] * latent[size_t(p * W + i)];
                        }
                    });
                }
            };
        } else {
            const attn::Kernel k = std::string(c.method) == "scalar" ? attn::Kernel::scalar : attn::Kernel::best;
            run = [&, k] {
                for (int64_t il = 0; il < layers; ++il)
                    attn::attend(be, 1, [&](int64_t) {
                        attn::Group g;
                        g.q_a = qa.data();
                        g.q_a_stride = C;
                        g.q_b = qpe.data();
                        g.q_b_stride = R;
                        g.dk_a = C;
                        g.dk = W;
                        g.dv = C;
                        g.n_rows = H;
                        g.n_keys = keys;
                        g.k = g.v = {lc.row_data(il, 0), lc.row_bytes(), row_type(type)};
                        g.scale = scale;
                        g.out = out.data();
                        g.out_stride = C;
                        return g;
                    }, k);
            };
        }
        const bench::Stats st = bench::time_it(std::string(c.method) == "old" ? std::max(3, reps / 3) : reps, run);
        report("mla-k2", exec::kv_type_name(type), keys, c, st, layers, H, double(layer_bytes), bw[size_t(c.threads - 1)]);
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int64_t> keys{512, 4096}, threads{1, 2};
    int reps = 9;
    int64_t stream_mib = 192, bw_mib = 512;
    bool mla = true, old = true;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--keys") keys = bench::int_list(bench::option_value(argc, argv, i));
        else if (a == "--threads") threads = bench::int_list(bench::option_value(argc, argv, i));
        else if (a == "--reps") reps = std::atoi(bench::option_value(argc, argv, i));
        else if (a == "--stream-mib") stream_mib = std::atoll(bench::option_value(argc, argv, i));
        else if (a == "--bw-mib") bw_mib = std::atoll(bench::option_value(argc, argv, i));
        else if (a == "--no-mla") mla = false;
        else if (a == "--no-old") old = false;
        else {
            std::fprintf(stderr,
                         "usage: bench_attention [--keys 512,4096] [--threads 1,2] [--reps 9] [--stream-mib 192] "
                         "[--bw-mib 512] [--no-mla] [--no-old]\n");
            return 2;
        }
    }
    std::printf("cpu: %s; best kernel: %s; load average %s\n", bench::cpu_model().c_str(),
                attn::kernel_name(attn::resolve(attn::Kernel::best)), bench::loadavg().c_str());
    const int64_t max_threads = *std::max_element(threads.begin(), threads.end());
    std::vector<double> bw(size_t(max_threads), 0.0);
    {
        bench::BandwidthBuffer buf(bw_mib);
        volatile float sink = 0.0f;
        for (int64_t t = 1; t <= max_threads; ++t) {
            bw[size_t(t - 1)] = bench::measure_read_bandwidth(buf, int(t), 5, sink).gbps;
            std::printf("memory-read bandwidth, %lld thread(s): %.2f GB/s\n", (long long)t, bw[size_t(t - 1)]);
        }
    }
    std::vector<Case> cases;
    for (int64_t t : threads) {
        if (old) cases.push_back({"old", int(t)});
        cases.push_back({"scalar", int(t)});
        cases.push_back({"best", int(t)});
    }
    std::printf("\nshape    kv    keys  method thr  ns/(tok,head) (min)     us/layer  cache GB/s  of bw\n");
    for (int64_t n : keys)
        for (exec::KvType type : {exec::KvType::f16, exec::KvType::q8_0}) {
            bench_gqa(type, n, cases, reps, stream_mib, bw);
            if (mla) bench_mla(type, n, cases, reps, stream_mib, bw);
        }
    std::printf("load average after: %s\n", bench::loadavg().c_str());
    return 0;
}
