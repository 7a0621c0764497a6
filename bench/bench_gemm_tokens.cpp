// Multi-token dots (lib/quant/gemm/gemm_tokens.hpp) against the per-(row, token) single dot they
// replace: a rows x tokens x cols product on one thread, walked as the CPU backend walks it (tiles
// of 16 rows; inside a tile the single dot runs every token over the tile's rows, the multi-token
// kernel runs register blocks of max_rows x max_tokens). Weights and activations are quantized
// from N(0,1) floats by the type's quantizers; the two outputs are checked equal bit for bit.
// Figures: median (and min) ns per product over --reps timed repetitions after a warm-up.
//
//   bench_gemm_tokens [--types q4_1,q8_0,q4_K,q6_K] [--rows 64] [--tokens 32] [--cols 2048]
//                     [--reps 9] [--mode both|single|multi] [--isa best|avx2|avx512]
// For instruction counts: --mode single / --mode multi under
//   valgrind --tool=callgrind --toggle-collect='*run_single*' (or '*run_multi*').
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "gguf/ggml_types.hpp"
#include "quant/formats.hpp"
#include "quant/gemm/gemm_tokens.hpp"
#include "quant/type_traits.hpp"
#include "util/cpu_features.hpp"

using namespace strata;

namespace {

constexpr int64_t kRowTile = 16;  // as lib/exec/cpu_backend.cpp

struct Problem {
    int64_t rows, tokens, cols;
    size_t w_row_bytes, x_row_bytes;
    std::vector<uint8_t> w, x;
};

std::vector<uint8_t> quantized(const quant::TypeTraits& t, int64_t n_rows, int64_t cols, std::mt19937_64& rng) {
    const size_t rb = quant::row_size(t.id, cols);
    std::vector<uint8_t> out(rb * size_t(n_rows));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < n_rows; ++r) {
        for (float& v : row) v = normal(rng);
        t.quantize(row.data(), out.data() + size_t(r) * rb, cols, nullptr);
    }
    return out;
}

[[gnu::noinline]] void run_single(const Problem& p, quant::VecDotFn dot, float* y) {
    for (int64_t r0 = 0; r0 < p.rows; r0 += kRowTile) {
        const int64_t r1 = std::min(p.rows, r0 + kRowTile);
        for (int64_t t = 0; t < p.tokens; ++t) {
            const uint8_t* xt = p.x.data() + size_t(t) * p.x_row_bytes;
            for (int64_t r = r0; r < r1; ++r) y[t * p.rows + r] = dot(p.cols, p.w.data() + size_t(r) * p.w_row_bytes, xt);
        }
    }
}

[[gnu::noinline]] void run_multi(const Problem& p, const quant::MultiDot& md, float* y) {
    for (int64_t r0 = 0; r0 < p.rows; r0 += kRowTile) {
        const int64_t r1 = std::min(p.rows, r0 + kRowTile);
        for (int64_t t = 0; t < p.tokens; t += md.max_tokens) {
            const int nt = int(std::min<int64_t>(md.max_tokens, p.tokens - t));
            for (int64_t r = r0; r < r1; r += md.max_rows) {
                const int nr = int(std::min<int64_t>(md.max_rows, r1 - r));
                md.fn(p.cols, p.w.data() + size_t(r) * p.w_row_bytes, p.w_row_bytes, nr,
                      p.x.data() + size_t(t) * p.x_row_bytes, p.x_row_bytes, nt, y + t * p.rows + r, p.rows);
            }
        }
    }
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t end = s.find(sep, start);
        const std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (!part.empty()) out.push_back(part);
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::string types_arg = "q4_1,q8_0,q4_K,q6_K,q5_K,iq4_xs";
    std::string mode = "both", isa_arg = "best";
    int64_t rows = 64, tokens = 32, cols = 2048;
    int reps = 9;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return bench::option_value(argc, argv, i); };
        if (a == "--types") types_arg = next();
        else if (a == "--rows") rows = std::atoll(next());
        else if (a == "--tokens") tokens = std::atoll(next());
        else if (a == "--cols") cols = std::atoll(next());
        else if (a == "--reps") reps = std::atoi(next());
        else if (a == "--mode") mode = next();
        else if (a == "--isa") isa_arg = next();
        else {
            std::fprintf(stderr, "usage: %s [--types a,b] [--rows N] [--tokens N] [--cols N] [--reps N] "
                                 "[--mode both|single|multi] [--isa best|avx2|avx512]\n", argv[0]);
            return 2;
        }
    }
    if (rows <= 0 || tokens <= 0 || cols <= 0 || reps <= 0 || (mode != "both" && mode != "single" && mode != "multi"))
        return 2;
    const quant::MultiDotIsa isa = isa_arg == "avx2"     ? quant::MultiDotIsa::avx2
                                   : isa_arg == "avx512" ? quant::MultiDotIsa::avx512
                                                         : quant::MultiDotIsa::best;
    if (!util::has_avx2_kernels()) {
        std::fprintf(stderr, "no AVX2+FMA+F16C (or STRATA_CPU=scalar): no multi-token kernels to time\n");
        return 1;
    }
    std::printf("cpu: %s\nload before: %s\n%lld rows x %lld tokens x %lld cols, 1 thread, %d reps, isa %s%s\n",
                bench::cpu_model().c_str(), bench::loadavg().c_str(), (long long)rows, (long long)tokens,
                (long long)cols, reps, isa_arg.c_str(),
                isa == quant::MultiDotIsa::best ? (util::has_avx512_vnni_kernels() ? " (avx512)" : " (avx2)") : "");
    std::printf("%-8s %6s %14s %14s %14s %14s %8s\n", "type", "block", "single med ns", "single min ns", "multi med ns",
                "multi min ns", "speedup");
    std::mt19937_64 rng(20260518);
    int status = 0;
    for (const std::string& name : split(types_arg, ',')) {
        const std::optional<uint32_t> id = gguf::ggml_type_from_name(name);
        const quant::TypeTraits* t = id ? quant::find_type_traits(*id) : nullptr;
        const quant::MultiDot md = t ? quant::find_multi_dot(*t, false, isa) : quant::MultiDot{};
        if (!t || !md.fn || cols % t->block_elements) {
            std::fprintf(stderr, "%s: no multi-token kernel (or cols not whole blocks)\n", name.c_str());
            status = 2;
            continue;
        }
        const quant::TypeTraits* act = quant::find_type_traits(t->dot_type);
        Problem p{rows, tokens, cols, quant::row_size(t->id, cols), quant::row_size(act->id, cols), {}, {}};
        p.w = quantized(*t, rows, cols, rng);
        p.x = quantized(*act, tokens, cols, rng);
        const quant::VecDotFn dot = quant::best_vec_dot(*t);
        std::vector<float> ys(size_t(rows * tokens)), ym(size_t(rows * tokens));
        bench::Stats s1, s2;
        if (mode != "multi") s1 = bench::time_it(reps, [&] { run_single(p, dot, ys.data()); });
        if (mode != "single") s2 = bench::time_it(reps, [&] { run_multi(p, md, ym.data()); });
        if (mode == "both" && std::memcmp(ys.data(), ym.data(), ys.size() * sizeof(float)) != 0) {
            std::fprintf(stderr, "%s: multi-token results differ from the single dot\n", name.c_str());
            status = 1;
        }
        char block[16];
        std::snprintf(block, sizeof block, "%dx%d", md.max_rows, md.max_tokens);
        std::printf("%-8s %6s %14.0f %14.0f %14.0f %14.0f %8.2f\n", t->name, block, s1.median_ns, s1.min_ns,
                    s2.median_ns, s2.min_ns, s2.median_ns > 0 ? s1.median_ns / s2.median_ns : 0.0);
    }
    std::printf("load after: %s\n", bench::loadavg().c_str());
    return status;
}
