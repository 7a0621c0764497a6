// Helpers shared by the benchmarks: timing statistics, the machine and build description that every
// report records, and the memory-read bandwidth measurement (the ceiling a bandwidth-bound kernel is
// compared against, measured in the same run).
#pragma once

// The commit these benchmarks were built from (generated at every build; lib/CMakeLists.txt).
#include "strata_git_commit.h"
#define STRATA_BENCH_COMMIT STRATA_GIT_COMMIT

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/cpu_features.hpp"
#include "util/thread_pool.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace strata::bench {

using Clock = std::chrono::steady_clock;

inline double elapsed_ns(Clock::time_point t0, Clock::time_point t1) {
    return std::chrono::duration<double, std::nano>(t1 - t0).count();
}

struct Stats {
    double median_ns = 0, min_ns = 0;
    int reps = 0;
    std::vector<double> samples_ns;  // every timed repetition, in run order (the raw figures)
};

inline Stats stats_of(std::vector<double> ns) {
    Stats s;
    s.reps = int(ns.size());
    s.samples_ns = ns;
    if (ns.empty()) return s;
    std::sort(ns.begin(), ns.end());
    const size_t n = ns.size();
    s.median_ns = n % 2 ? ns[n / 2] : 0.5 * (ns[n / 2 - 1] + ns[n / 2]);
    s.min_ns = ns.front();
    return s;
}

// Two untimed calls, then `reps` timed ones.
inline Stats time_it(int reps, const std::function<void()>& fn) {
    fn();  // warm-up: page faults, caches, thread start
    fn();
    std::vector<double> ns;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        fn();
        ns.push_back(elapsed_ns(t0, Clock::now()));
    }
    return stats_of(std::move(ns));
}

inline std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown";
}

// The 1-minute load average: on a shared machine other processes inflate the timings (the min
// column is then the more telling one), so the report records it before and after the run.
inline std::string loadavg() {
    std::ifstream in("/proc/loadavg");
    std::string a;
    in >> a;
    return a.empty() ? "unknown" : a;
}

inline std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

// "512,4096" as numbers (an option's comma-separated list).
inline std::vector<int64_t> int_list(const std::string& s) {
    std::vector<int64_t> out;
    size_t i = 0;
    while (i < s.size()) {
        size_t j = s.find(',', i);
        if (j == std::string::npos) j = s.size();
        out.push_back(std::atoll(s.substr(i, j - i).c_str()));
        i = j + 1;
    }
    return out;
}

// The value after the option argv[i] (i then indexes it); without one, says so and exits with 2.
inline const char* option_value(int argc, char** argv, int& i) {
    if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
    }
    return argv[++i];
}

// Writes a report (the benchmarks' JSON) to path and says so on stdout; false, with the reason on
// stderr, when it cannot.
inline bool write_report(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return false;
    }
    std::printf("wrote %s\n", path.c_str());
    return true;
}

inline std::string compiler_name() {
#if defined(__clang__)
    return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    return std::string("g++ ") + __VERSION__;
#else
    return "unknown";
#endif
}

// Streaming read: the sum of a buffer much larger than the last-level cache, split over threads.
#if defined(__x86_64__)
__attribute__((target("avx2"))) inline float stream_sum_avx2(const float* p, int64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int64_t i = 0; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    float s = 0;
    for (float v : lanes) s += v;
    return s;
}
#endif

inline float stream_sum(const float* p, int64_t n) {
#if defined(__x86_64__)
    if (util::cpu_features().avx2) return stream_sum_avx2(p, n);
#endif
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int64_t i = 0; i + 4 <= n; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
    }
    return (s0 + s1) + (s2 + s3);
}

template <typename T>
struct AlignedFree {
    void operator()(T* p) const { std::free(p); }
};
template <typename T>
std::unique_ptr<T[], AlignedFree<T>> aligned_array(size_t n) {
    const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    return std::unique_ptr<T[], AlignedFree<T>>(static_cast<T*>(std::aligned_alloc(64, bytes)));
}

// A buffer of `mib` MiB for the bandwidth measurement, filled so that every page is really backed.
struct BandwidthBuffer {
    explicit BandwidthBuffer(int64_t mib) : elems(size_t(mib << 20) / sizeof(float)), data(aligned_array<float>(elems)) {
        for (size_t i = 0; i < elems; ++i) data[i] = float(i & 1023);
    }
    size_t elems;
    std::unique_ptr<float[], AlignedFree<float>> data;
};

struct Bandwidth {
    int threads = 0;
    double gbps = 0;       // bytes read / median time
    uint64_t bytes = 0;    // bytes read per timed repetition
    Stats stats;
};

// Memory-read bandwidth with `threads` threads: each sums its contiguous share of the buffer.
// `sink` keeps the sums alive so the reads are not optimised away.
inline Bandwidth measure_read_bandwidth(const BandwidthBuffer& buf, int threads, int reps, volatile float& sink) {
    util::ThreadPool pool(threads);
    const int64_t chunk = int64_t(buf.elems) / threads / 32 * 32;
    Bandwidth bw;
    bw.threads = threads;
    bw.stats = time_it(reps, [&] {
        std::vector<float> part(size_t(threads), 0.0f);
        pool.parallel_for(threads, [&](int64_t b, int64_t) { part[size_t(b)] = stream_sum(buf.data.get() + b * chunk, chunk); });
        for (float p : part) sink = sink + p;
    });
    bw.bytes = uint64_t(chunk) * uint64_t(threads) * sizeof(float);
    bw.gbps = double(bw.bytes) / bw.stats.median_ns;
    return bw;
}

}  // namespace strata::bench
