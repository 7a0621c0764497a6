// IQ1_S products of many tokens: the GEMM (quant/gemm/iq1s_gemm.hpp: weights decoded once per tile,
// VPDPBUSD) against the one-row AVX2 dot run for every token (what prefill ran before), on one
// thread, for several token counts, and the weight packing alone. Also checks that both give the
// same bits. Prints GMAC/s per path and the ratio; --json writes the figures with the machine and build.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "quant/dot/iq1s_dot.hpp"
#include "quant/gemm/iq1s_gemm.hpp"
#include "quant/gemm/iq1s_gemm_panel.hpp"
#include "quant/codecs/q8_k.hpp"

using namespace strata;

int main(int argc, char** argv) {
    int64_t rows = 2048, cols = 2048;
    int reps = 5;
    std::string json_path, kernel = "best";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--rows") rows = std::atoll(bench::option_value(argc, argv, i));
        else if (a == "--cols") cols = std::atoll(bench::option_value(argc, argv, i));
        else if (a == "--reps") reps = std::atoi(bench::option_value(argc, argv, i));
        else if (a == "--json") json_path = bench::option_value(argc, argv, i);
        else if (a == "--kernel") kernel = bench::option_value(argc, argv, i);
        else {
            std::fprintf(stderr, "usage: %s [--rows N] [--cols N (multiple of 256)] [--reps N] [--kernel best|avx2|avx512] [--json out.json]\n", argv[0]);
            return 2;
        }
    }
    if (rows <= 0 || cols <= 0 || cols % 256 != 0 || reps <= 0) {
        std::fprintf(stderr, "bad arguments\n");
        return 2;
    }
    if (!quant::iq1s_gemm_available()) {
        std::fprintf(stderr, "this CPU has no AVX2 (or STRATA_CPU=scalar): nothing to compare\n");
        return 1;
    }
    if (kernel != "best" && kernel != "avx2" && kernel != "avx512") {
        std::fprintf(stderr, "--kernel takes best, avx2 or avx512\n");
        return 2;
    }
    const bool avx512 = kernel == "avx512" || (kernel == "best" && util::has_avx512_vnni_kernels());
    if (avx512 && !util::has_avx512_vnni_kernels()) {
        std::fprintf(stderr, "--kernel avx512: this CPU has no AVX-512 VNNI\n");
        return 1;
    }
    const int64_t nb = cols / 256, max_tok = 512;
    std::mt19937_64 rng(7);
    std::vector<quant::block_iq1_s> w(size_t(rows * nb));
    for (auto& b : w) {
        auto* bytes = reinterpret_cast<uint8_t*>(&b);
        for (size_t i = 0; i < sizeof b; ++i) bytes[i] = uint8_t(rng());
        b.d = uint16_t(0x2000 + rng() % 0x1000);  // a finite fp16 scale
    }
    std::normal_distribution<float> normal;
    std::vector<float> x(size_t(max_tok * cols));
    for (float& v : x) v = normal(rng);
    std::vector<quant::block_q8_K> xq(size_t(max_tok * nb));
    quant::quantize_row_q8_k(x.data(), xq.data(), max_tok * cols);
    std::vector<uint8_t> wp_buf(quant::iq1s_gemm_detail::weight_bytes_with(avx512, cols, 16) + 64),
        ap_buf(quant::iq1s_gemm_detail::act_bytes_with(avx512, cols, max_tok) + 64);
    auto align = [](std::vector<uint8_t>& b) { return b.data() + (64 - reinterpret_cast<uintptr_t>(b.data()) % 64) % 64; };
    uint8_t* wp = align(wp_buf);
    uint8_t* ap = align(ap_buf);
    std::vector<float> y_row(size_t(max_tok * rows)), y_gemm(size_t(max_tok * rows));

    std::printf("IQ1_S %lld x %lld, one thread, GEMM kernel %s, %s\n", (long long)rows, (long long)cols,
                avx512 ? "avx512" : "avx2", bench::cpu_model().c_str());
    std::printf("%8s %14s %14s %8s %s\n", "tokens", "row GMAC/s", "GEMM GMAC/s", "ratio", "same bits");
    std::string json = "{\"bench\":\"iq1s_gemm\",\"rows\":" + std::to_string(rows) + ",\"cols\":" + std::to_string(cols) +
                       ",\"kernel\":\"" + std::string(avx512 ? "avx512" : "avx2") + "\",\"cpu\":\"" + bench::json_escape(bench::cpu_model()) + "\",\"load_before\":\"" +
                       bench::json_escape(bench::loadavg()) + "\",\"results\":[";
    bool first = true, all_same = true;
    for (int64_t n_tok : {1, 2, 3, 4, 8, 16, 64, 512}) {
        const bench::Stats row = bench::time_it(reps, [&] {
            for (int64_t t = 0; t < n_tok; ++t)
                for (int64_t r0 = 0; r0 < rows; r0 += 16)
                    quant::vec_dot_iq1s_q8k_simd_rows(cols, w.data() + r0 * nb, nb, std::min<int64_t>(16, rows - r0),
                                                     xq.data() + t * nb, y_row.data() + t * rows + r0);
        });
        // As the CPU backend runs it: activations packed once, each 16-row tile packed and multiplied.
        const bench::Stats gemm = bench::time_it(reps, [&] {
            quant::iq1s_gemm_detail::pack_act_with(avx512, cols, xq.data(), n_tok, ap);
            for (int64_t r0 = 0; r0 < rows; r0 += 16) {
                const int64_t n = std::min<int64_t>(16, rows - r0);
                quant::iq1s_gemm_detail::pack_weights_with(avx512, cols, w.data() + r0 * nb, nb, n, wp);
                quant::iq1s_gemm_detail::gemm_with(avx512, cols, wp, n, ap, 0, n_tok, y_gemm.data() + r0, rows);
            }
        });
        const bool same = std::memcmp(y_row.data(), y_gemm.data(), size_t(n_tok * rows) * sizeof(float)) == 0;
        all_same = all_same && same;
        const double macs = double(rows) * double(cols) * double(n_tok);
        const double g_row = macs / row.median_ns, g_gemm = macs / gemm.median_ns;
        std::printf("%8lld %14.2f %14.2f %8.2f %s\n", (long long)n_tok, g_row, g_gemm, g_gemm / g_row, same ? "yes" : "NO");
        json += std::string(first ? "" : ",") + "{\"tokens\":" + std::to_string(n_tok) +
                ",\"row_median_ns\":" + std::to_string(row.median_ns) + ",\"gemm_median_ns\":" +
                std::to_string(gemm.median_ns) + ",\"row_gmac_s\":" + std::to_string(g_row) +
                ",\"gemm_gmac_s\":" + std::to_string(g_gemm) + ",\"same_bits\":" + (same ? "true" : "false") + "}";
        first = false;
    }
    json += "]";
    // Packing alone (every 16-row tile of the matrix into the panel, as the backend does per
    // product): what a GEMM pays once per weight, whatever the token count.
    const bench::Stats pack = bench::time_it(reps, [&] {
        for (int64_t r0 = 0; r0 < rows; r0 += 16)
            quant::iq1s_gemm_detail::pack_weights_with(avx512, cols, w.data() + r0 * nb, nb, std::min<int64_t>(16, rows - r0), wp);
    });
    const double superblocks = double(rows) * double(nb);
    std::printf("weight packing alone: %.2f ns per row-superblock (median; min %.2f)\n", pack.median_ns / superblocks,
                pack.min_ns / superblocks);
    json += ",\"pack_median_ns_per_row_superblock\":" + std::to_string(pack.median_ns / superblocks) +
            ",\"pack_min_ns_per_row_superblock\":" + std::to_string(pack.min_ns / superblocks) + "}\n";
    if (!json_path.empty() && !bench::write_report(json_path, json)) return 1;
    return all_same ? 0 : 1;
}
