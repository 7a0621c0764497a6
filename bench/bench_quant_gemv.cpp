// GEMV benchmark over the weight types: y = W x for random rows x cols matrices in each type, run by
// the CPU backend's matmul (what decode runs: activations quantized to the type ggml pairs with the
// weights, then the type's dot kernel per row), scalar and best kernel, 1 and 2 threads, beside the
// memory-read bandwidth measured in the same run. Each figure is the median (and min) over --reps
// timed repetitions after a warm-up.
//
// Weights are read cold: each repetition walks a tall stack of copies of the matrix (at least
// --stream-mib MiB) and the time is normalised back to one rows x cols matrix, so they come from
// DRAM as in decode of a model larger than the caches. Random weights: quantized from N(0,1) floats
// where strata has a quantizer, else random blocks with finite random binary16 scales.
//
//   bench_quant_gemv [--types iq1_s,iq1_m,...] [--shapes 4096x4096,7168x2048] [--reps 7]
//                    [--threads 1,2] [--bw-mib 512] [--stream-mib 256] [--json out.json]
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
#include "exec/cpu_backend.hpp"
#include "gguf/ggml_types.hpp"
#include "quant/formats.hpp"
#include "quant/half.hpp"
#include "quant/type_traits.hpp"
#include "util/cpu_features.hpp"

using namespace strata;
using bench::Stats;
using bench::time_it;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

// Byte offsets of the binary16 block scales of the types without a quantizer (as ggml lays them
// out), so that random blocks get finite scales; ggml_type -> offsets.
std::vector<int> f16_scale_offsets(uint32_t type) {
    switch (type) {
        case quant::kTypeQ2_K: return {80, 82};
        case quant::kTypeQ3_K: return {108};
        case quant::kTypeTQ1_0: return {52};
        case quant::kTypeTQ2_0: return {64};
        case quant::kTypeMXFP4: return {};  // e8m0 byte 0, set below
        default: return {0};              // IQ2/IQ3, IQ4_NL, Q1_0: d first
    }
}

// rows x cols weights of `type`, in `copies` consecutive copies of one random matrix.
std::vector<uint8_t> random_weights(const quant::TypeTraits& t, int64_t rows, int64_t cols, int64_t copies,
                                    std::mt19937_64& rng) {
    const size_t row_bytes = quant::row_size(t.id, cols);
    std::vector<uint8_t> one(row_bytes * size_t(rows));
    if (t.quantize) {
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = 0; r < rows; ++r) {
            for (float& v : row) v = normal(rng) / std::sqrt(float(cols));
            t.quantize(row.data(), one.data() + size_t(r) * row_bytes, cols, nullptr);
        }
    } else {
        for (uint8_t& b : one) b = uint8_t(rng());
        std::uniform_real_distribution<float> expo(-4.0f, -1.0f);
        const std::vector<int> offsets = f16_scale_offsets(t.id);
        for (size_t b = 0; b < one.size() / t.block_bytes; ++b) {
            uint8_t* blk = one.data() + b * t.block_bytes;
            for (int off : offsets) {
                const uint16_t d = quant::f32_to_f16(std::pow(10.0f, expo(rng)) * ((rng() & 1) ? -1.0f : 1.0f));
                std::memcpy(blk + off, &d, 2);
            }
            if (t.id == quant::kTypeMXFP4) blk[0] = uint8_t(120 + rng() % 8);
        }
    }
    std::vector<uint8_t> all(one.size() * size_t(copies));
    for (int64_t c = 0; c < copies; ++c) std::memcpy(all.data() + size_t(c) * one.size(), one.data(), one.size());
    return all;
}

struct Row {
    std::string type, kernel;
    int64_t rows, cols;
    int threads;
    Stats stats;  // per rows x cols matrix
    double ns_per_row, weight_gbps, mem_gbps;
};

}  // namespace

int main(int argc, char** argv) {
    std::string types_arg = "iq1_s,iq1_m,iq2_xxs,iq3_xxs,iq4_xs,q4_K,q5_K,q6_K,q8_0";
    std::string shapes_arg = "4096x4096,7168x2048";
    std::string threads_arg = "1,2";
    int64_t bw_mib = 512, stream_mib = 256;
    int reps = 7;
    std::string json_path;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return bench::option_value(argc, argv, i); };
        if (a == "--types") types_arg = next();
        else if (a == "--shapes") shapes_arg = next();
        else if (a == "--threads") threads_arg = next();
        else if (a == "--reps") reps = std::atoi(next());
        else if (a == "--bw-mib") bw_mib = std::atoll(next());
        else if (a == "--stream-mib") stream_mib = std::atoll(next());
        else if (a == "--json") json_path = next();
        else {
            std::fprintf(stderr, "usage: %s [--types a,b] [--shapes RxC,...] [--threads 1,2] [--reps N] [--bw-mib N] "
                                 "[--stream-mib N] [--json out.json]\n", argv[0]);
            return 2;
        }
    }
    std::vector<const quant::TypeTraits*> types;
    for (const std::string& name : split(types_arg, ',')) {
        const std::optional<uint32_t> id = gguf::ggml_type_from_name(name);
        const quant::TypeTraits* found = id ? quant::find_type_traits(*id) : nullptr;
        if (!found || !found->dot_scalar) {  // float and activation-only types have no dot to time
            std::fprintf(stderr, "unknown or activation-only type '%s' (known: %s)\n", name.c_str(),
                         quant::supported_type_names().c_str());
            return 2;
        }
        types.push_back(found);
    }
    std::vector<std::pair<int64_t, int64_t>> shapes;
    for (const std::string& s : split(shapes_arg, ',')) {
        const auto rc = split(s, 'x');
        if (rc.size() != 2 || std::atoll(rc[0].c_str()) <= 0 || std::atoll(rc[1].c_str()) <= 0) {
            std::fprintf(stderr, "bad shape '%s' (ROWSxCOLS)\n", s.c_str());
            return 2;
        }
        shapes.emplace_back(std::atoll(rc[0].c_str()), std::atoll(rc[1].c_str()));
    }
    std::vector<int> thread_counts;
    for (const std::string& s : split(threads_arg, ',')) thread_counts.push_back(std::max(1, std::atoi(s.c_str())));
    if (reps <= 0) return 2;

    const std::string load_before = bench::loadavg();
    volatile float sink = 0;
    const bench::BandwidthBuffer bw(bw_mib);
    std::vector<double> mem_gbps(size_t(*std::max_element(thread_counts.begin(), thread_counts.end()) + 1), 0.0);
    for (int t : thread_counts) mem_gbps[size_t(t)] = bench::measure_read_bandwidth(bw, t, reps, sink).gbps;

    std::mt19937_64 rng(20261201);
    std::vector<Row> table;
    const bool has_avx2 = util::has_avx2_kernels();
    for (const auto& [rows, cols] : shapes) {
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> x(static_cast<size_t>(cols));
        for (float& v : x) v = normal(rng);
        for (const quant::TypeTraits* t : types) {
            if (cols % t->block_elements) continue;
            const size_t mat_bytes = quant::row_size(t->id, cols) * size_t(rows);
            const int64_t copies = std::max<int64_t>(2, (stream_mib << 20) / int64_t(mat_bytes) + 1);
            std::printf("preparing %s %lld x %lld (%.2f MB, x%lld copies)\n", t->name, (long long)rows, (long long)cols,
                        double(mat_bytes) / 1e6, (long long)copies);
            std::fflush(stdout);
            const std::vector<uint8_t> w = random_weights(*t, rows, cols, copies, rng);
            model::WeightView view;
            view.name = std::string("bench.") + t->name;
            view.type = t->id;
            view.cols = cols;
            view.rows = rows * copies;
            view.row_bytes = quant::row_size(t->id, cols);
            view.data = w.data();
            view.nbytes = w.size();
            view.mat_stride = w.size();
            std::vector<float> y(static_cast<size_t>(rows * copies));
            std::vector<quant::Iq1sKernel> kernels{quant::Iq1sKernel::scalar};
            if (has_avx2 && t->dot_avx2) kernels.push_back(quant::Iq1sKernel::simd);
            if (has_avx2 && t->id == quant::kTypeIQ1_S) kernels.push_back(quant::Iq1sKernel::avx2);  // ggml's float order
            for (int threads : thread_counts) {
                for (quant::Iq1sKernel k : kernels) {
                    exec::CpuBackend cpu(threads, k);
                    cpu.matmul(view, x.data(), 1, y.data());  // warm-up
                    Stats s = time_it(reps, [&] { cpu.matmul(view, x.data(), 1, y.data()); });
                    s.median_ns /= double(copies);
                    s.min_ns /= double(copies);
                    for (float v : y) sink = sink + v * 0.0f;
                    table.push_back({t->name, quant::iq1s_kernel_name(k), rows, cols, threads, s,
                                     s.median_ns / double(rows), double(mat_bytes) / s.median_ns,
                                     mem_gbps[size_t(threads)]});
                }
            }
        }
    }

    const std::string load_after = bench::loadavg();
    const std::string cpu_name = bench::cpu_model();
    std::printf("\ncpu: %s (%u hardware threads); %s; build %s; load average (1 min) before %s, after %s\n",
                cpu_name.c_str(), std::thread::hardware_concurrency(), bench::compiler_name().c_str(),
                STRATA_BENCH_BUILD_TYPE, load_before.c_str(), load_after.c_str());
    for (int t : thread_counts)
        std::printf("memory read bandwidth (%lld MiB streaming sum), %d thread(s): %.2f GB/s\n", (long long)bw_mib, t,
                    mem_gbps[size_t(t)]);
    std::printf("cold weights (each rep walks >= %lld MiB of copies); times per rows x cols GEMV, including the "
                "activation quantization; median of %d (min)\n\n", (long long)stream_mib, reps);
    std::printf("%-8s %-11s %-7s %3s %12s %12s %10s %9s %9s\n", "type", "shape", "kernel", "thr", "median us", "min us",
                "ns/row", "GB/s", "of membw");
    for (const Row& r : table) {
        const std::string shape = std::to_string(r.rows) + "x" + std::to_string(r.cols);
        std::printf("%-8s %-11s %-7s %3d %12.1f %12.1f %10.1f %9.2f %8.0f%%\n", r.type.c_str(), shape.c_str(),
                    r.kernel.c_str(), r.threads, r.stats.median_ns / 1e3, r.stats.min_ns / 1e3, r.ns_per_row,
                    r.weight_gbps, 100.0 * r.weight_gbps / r.mem_gbps);
    }
    if (!json_path.empty()) {
        std::ostringstream j;
        j << "{\n  \"benchmark\": \"quant_gemv\",\n  \"reps\": " << reps << ",\n  \"machine\": {\"cpu\": \""
          << bench::json_escape(cpu_name) << "\", \"hardware_threads\": " << std::thread::hardware_concurrency()
          << "},\n  \"loadavg_1min\": {\"before\": \"" << load_before << "\", \"after\": \"" << load_after
          << "\"},\n  \"build_type\": \"" << STRATA_BENCH_BUILD_TYPE << "\",\n  \"commit\": \"" << STRATA_BENCH_COMMIT
          << "\",\n  \"regime\": \"cold weights, >= " << stream_mib << " MiB of copies per rep\",\n"
          << "  \"memory_bandwidth_gbps\": {";
        for (size_t i = 0; i < thread_counts.size(); ++i)
            j << (i ? ", " : "") << "\"" << thread_counts[i] << "\": " << mem_gbps[size_t(thread_counts[i])];
        j << "},\n  \"results\": [\n";
        for (size_t i = 0; i < table.size(); ++i) {
            const Row& r = table[i];
            j << "    {\"type\": \"" << r.type << "\", \"rows\": " << r.rows << ", \"cols\": " << r.cols
              << ", \"kernel\": \"" << r.kernel << "\", \"threads\": " << r.threads << ", \"median_ns\": "
              << r.stats.median_ns << ", \"min_ns\": " << r.stats.min_ns << ", \"ns_per_row\": " << r.ns_per_row
              << ", \"weight_gbps\": " << r.weight_gbps << ", \"memory_gbps\": " << r.mem_gbps << "}"
              << (i + 1 < table.size() ? ",\n" : "\n");
        }
        j << "  ]\n}\n";
        if (!bench::write_report(json_path, j.str())) return 1;
    }
    return sink == 12345.0f ? 3 : 0;
}
