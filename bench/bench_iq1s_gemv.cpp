// IQ1_S GEMV benchmark: y = W x for a random rows x cols IQ1_S matrix, scalar and AVX2 kernels,
// 1 and 2 threads, next to an F32 GEMV of the same shape and a memory-read bandwidth measured in
// the same run. Each figure is the median (and min) over --reps timed repetitions after warm-up.
//
// Two regimes per format: "hot" repeats the same matrix (4096 x 4096 IQ1_S is 3.3 MB, F32 is
// 64 MiB: both can sit in a large L3), "stream" runs one tall matrix of >= --stream-mib MiB so the
// weights come from DRAM, normalised back to one rows x cols matrix.
//
//   bench_iq1s_gemv [--rows 4096] [--cols 4096] [--reps 9] [--bw-mib 1024] [--stream-mib 1024]
//                   [--json out.json]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "quant/dot/gemv.hpp"
#include "quant/half.hpp"
#include "quant/dot/iq1s_dot.hpp"
#include "util/cpu_features.hpp"
#include "util/thread_pool.hpp"

using namespace strata;
using bench::aligned_array;
using bench::Stats;
using bench::time_it;

namespace {

struct Row {
    std::string format, regime, kernel;
    int threads;
    Stats stats;
    double ns_per_row, ns_per_block, weight_gbps, mem_gbps, vs_f32, of_mem_bw;
};

}  // namespace

int main(int argc, char** argv) {
    int64_t rows = 4096, cols = 4096, bw_mib = 1024, stream_mib = 1024;
    int reps = 9;
    std::string json_path;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return bench::option_value(argc, argv, i); };
        if (a == "--rows") rows = std::atoll(next());
        else if (a == "--cols") cols = std::atoll(next());
        else if (a == "--reps") reps = std::atoi(next());
        else if (a == "--bw-mib") bw_mib = std::atoll(next());
        else if (a == "--stream-mib") stream_mib = std::atoll(next());
        else if (a == "--json") json_path = next();
        else {
            std::fprintf(stderr, "usage: %s [--rows N] [--cols N (multiple of 256)] [--reps N] [--bw-mib N] "
                                 "[--stream-mib N] [--json out.json]\n", argv[0]);
            return 2;
        }
    }
    if (rows <= 0 || cols <= 0 || cols % 256 != 0 || reps <= 0) {
        std::fprintf(stderr, "bad arguments\n");
        return 2;
    }

    const std::string load_before = bench::loadavg();
    std::mt19937_64 rng(42);
    const int64_t blocks_per_row = cols / 256;
    const int64_t hot_blocks = rows * blocks_per_row;
    const size_t iq1s_row_bytes = size_t(blocks_per_row) * sizeof(quant::block_iq1_s);
    const size_t f32_row_bytes = size_t(cols) * sizeof(float);
    // Tall matrices for the streaming regime: whole multiples of rows, at least stream_mib MiB.
    const int64_t iq1s_copies = std::max<int64_t>(1, (stream_mib << 20) / int64_t(rows * iq1s_row_bytes) + 1);
    const int64_t f32_copies = std::max<int64_t>(1, (stream_mib << 20) / int64_t(rows * f32_row_bytes) + 1);

    std::printf("preparing: IQ1_S %lld x %lld (x%lld for streaming), F32 (x%lld), %lld MiB bandwidth buffer\n",
                (long long)rows, (long long)cols, (long long)iq1s_copies, (long long)f32_copies, (long long)bw_mib);
    auto w = aligned_array<quant::block_iq1_s>(size_t(hot_blocks * iq1s_copies));
    {
        std::uniform_real_distribution<float> expo(-3.0f, 0.0f);
        for (int64_t b = 0; b < hot_blocks * iq1s_copies; ++b) {
            quant::block_iq1_s& blk = w[size_t(b)];
            for (auto& q : blk.qs) q = uint8_t(rng());
            for (auto& h : blk.qh) h = uint16_t(rng());
            blk.d = quant::f32_to_f16(std::pow(10.0f, expo(rng)) * ((rng() & 1) ? -1.0f : 1.0f));
        }
    }
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(cols));
    for (auto& v : x) v = normal(rng);
    const size_t f32_elems = size_t(rows * cols * f32_copies);
    auto wf = aligned_array<float>(f32_elems);
    {
        // Cheap fill (an LCG) for hundreds of MB: values in [-1, 1).
        uint32_t s = 12345;
        for (size_t i = 0; i < f32_elems; ++i) {
            s = s * 1664525u + 1013904223u;
            wf[i] = float(int32_t(s)) * 0x1p-31f;
        }
    }
    const bench::BandwidthBuffer bw(bw_mib);

    std::vector<float> y(static_cast<size_t>(rows * std::max(iq1s_copies, f32_copies)));
    volatile float sink = 0;

    // Memory-read bandwidth, 1 and 2 threads.
    double mem_gbps[3] = {0, 0, 0};
    Stats mem_stats[3];
    for (int t : {1, 2}) {
        const bench::Bandwidth m = bench::measure_read_bandwidth(bw, t, reps, sink);
        mem_stats[t] = m.stats;
        mem_gbps[t] = m.gbps;
    }

    std::vector<Row> table;
    std::vector<quant::Iq1sKernel> kernels{quant::Iq1sKernel::scalar};
    if (quant::resolve_iq1s_kernel(quant::Iq1sKernel::best) == quant::Iq1sKernel::simd) {
        kernels.push_back(quant::Iq1sKernel::simd);  // what the CPU backend runs
        kernels.push_back(quant::Iq1sKernel::avx2);  // ggml's AVX2 float order
    }

    for (const char* regime : {"hot", "stream"}) {
        const bool stream = std::strcmp(regime, "stream") == 0;
        for (int t : {1, 2}) {
            util::ThreadPool pool(t);
            for (quant::Iq1sKernel k : kernels) {
                const quant::GemvOptions opt{t > 1 ? &pool : nullptr, k};
                // F32 first: its time is the denominator of the IQ1_S rows below.
                const int64_t fr = stream ? rows * f32_copies : rows;
                Stats fs = time_it(stream ? std::max(3, reps / 2) : reps, [&] {
                    quant::gemv_f32(wf.get(), fr, cols, x.data(), y.data(), opt);
                });
                const double f_scale = double(fr) / double(rows);  // per rows x cols matrix
                const double f_ns = fs.median_ns / f_scale;
                const int64_t ir = stream ? rows * iq1s_copies : rows;
                Stats is = time_it(reps, [&] { quant::gemv_iq1s(w.get(), ir, cols, x.data(), y.data(), opt); });
                const double i_scale = double(ir) / double(rows);
                const double i_ns = is.median_ns / i_scale;
                Row fr_row{"F32", regime, quant::iq1s_kernel_name(k), t, fs, f_ns / double(rows),
                           f_ns / double(hot_blocks), double(rows) * double(f32_row_bytes) / f_ns, mem_gbps[t], 1.0, 0};
                fr_row.stats.median_ns = f_ns;
                fr_row.stats.min_ns = fs.min_ns / f_scale;
                fr_row.of_mem_bw = fr_row.weight_gbps / mem_gbps[t];
                Row ir_row{"IQ1_S", regime, quant::iq1s_kernel_name(k), t, is, i_ns / double(rows),
                           i_ns / double(hot_blocks), double(rows) * double(iq1s_row_bytes) / i_ns, mem_gbps[t],
                           f_ns / i_ns, 0};
                ir_row.stats.median_ns = i_ns;
                ir_row.stats.min_ns = is.min_ns / i_scale;
                ir_row.of_mem_bw = ir_row.weight_gbps / mem_gbps[t];
                table.push_back(fr_row);
                table.push_back(ir_row);
            }
        }
    }

    const std::string load_after = bench::loadavg();
    const std::string cpu = bench::cpu_model();
    const unsigned hw = std::thread::hardware_concurrency();
    const std::string compiler = bench::compiler_name();
    const std::string flags = std::string(STRATA_BENCH_CXX_FLAGS) + " | strata_core: " + STRATA_BENCH_CORE_OPTIONS;
    std::printf("\nIQ1_S GEMV %lld x %lld (%zu-byte blocks, %.2f MB of IQ1_S weights, %.1f MB as F32)\n",
                (long long)rows, (long long)cols, sizeof(quant::block_iq1_s), double(rows) * double(iq1s_row_bytes) / 1e6,
                double(rows) * double(f32_row_bytes) / 1e6);
    std::printf("cpu: %s (%u hardware threads); %s; build %s, flags '%s'; AVX2 kernels in *_avx2.cpp with "
                "-mavx2 -mfma -mf16c\n", cpu.c_str(), hw, compiler.c_str(), STRATA_BENCH_BUILD_TYPE, flags.c_str());
    std::printf("load average (1 min) before %s, after %s\n", load_before.c_str(), load_after.c_str());
    std::printf("memory read bandwidth (%lld MiB streaming sum): 1 thread %.2f GB/s, 2 threads %.2f GB/s\n",
                (long long)bw_mib, mem_gbps[1], mem_gbps[2]);
    std::printf("times per rows x cols GEMV (IQ1_S includes quantizing x to Q8_K); reps %d, median (min)\n\n", reps);
    std::printf("%-6s %-6s %-7s %3s %12s %12s %10s %10s %9s %9s %9s\n", "format", "regime", "kernel", "thr",
                "median us", "min us", "ns/row", "ns/block", "GB/s", "x F32", "of membw");
    for (const Row& r : table)
        std::printf("%-6s %-6s %-7s %3d %12.1f %12.1f %10.1f %10.2f %9.2f %9.2f %8.0f%%\n", r.format.c_str(),
                    r.regime.c_str(), r.kernel.c_str(), r.threads, r.stats.median_ns / 1e3, r.stats.min_ns / 1e3,
                    r.ns_per_row, r.ns_per_block, r.weight_gbps, r.vs_f32, 100.0 * r.of_mem_bw);
    std::printf("\nns/block = wall time / (rows*cols/256) blocks (for 2 threads: aggregate; x2 for per-thread cost);"
                " GB/s = weight bytes / time; x F32 = F32 time / this time, same kernel family, threads and regime.\n");

    if (!json_path.empty()) {
        std::ostringstream j;
        j << "{\n  \"benchmark\": \"iq1s_gemv\",\n  \"rows\": " << rows << ", \"cols\": " << cols
          << ",\n  \"reps\": " << reps << ",\n  \"machine\": {\"cpu\": \"" << bench::json_escape(cpu)
          << "\", \"hardware_threads\": " << hw << ", \"avx2\": " << (util::cpu_features().avx2 ? "true" : "false")
          << "},\n  \"loadavg_1min\": {\"before\": \"" << load_before << "\", \"after\": \"" << load_after
          << "\"},\n  \"compiler\": \"" << bench::json_escape(compiler) << "\",\n  \"build_type\": \"" << STRATA_BENCH_BUILD_TYPE
          << "\",\n  \"flags\": \"" << bench::json_escape(flags) << "\",\n  \"avx2_kernel_flags\": \"-mavx2 -mfma -mf16c\""
          << ",\n  \"memory_bandwidth\": {\"buffer_mib\": " << bw_mib << ", \"method\": \"streaming float sum\""
          << ", \"threads_1\": {\"gbps\": " << mem_gbps[1] << ", \"median_ns\": " << mem_stats[1].median_ns
          << ", \"min_ns\": " << mem_stats[1].min_ns << "}, \"threads_2\": {\"gbps\": " << mem_gbps[2]
          << ", \"median_ns\": " << mem_stats[2].median_ns << ", \"min_ns\": " << mem_stats[2].min_ns << "}},\n"
          << "  \"stream_copies\": {\"iq1s\": " << iq1s_copies << ", \"f32\": " << f32_copies << "},\n"
          << "  \"results\": [\n";
        for (size_t i = 0; i < table.size(); ++i) {
            const Row& r = table[i];
            j << "    {\"format\": \"" << r.format << "\", \"regime\": \"" << r.regime << "\", \"kernel\": \""
              << r.kernel << "\", \"threads\": " << r.threads << ", \"median_ns\": " << r.stats.median_ns
              << ", \"min_ns\": " << r.stats.min_ns << ", \"reps\": " << r.stats.reps << ", \"ns_per_row\": "
              << r.ns_per_row << ", \"ns_per_block\": " << r.ns_per_block << ", \"weight_gbps\": " << r.weight_gbps
              << ", \"speedup_vs_f32\": " << r.vs_f32 << ", \"fraction_of_mem_bw\": " << r.of_mem_bw << "}"
              << (i + 1 < table.size() ? ",\n" : "\n");
        }
        j << "  ]\n}\n";
        if (!bench::write_report(json_path, j.str())) return 1;
    }
    return sink == 12345.0f ? 3 : 0;
}
