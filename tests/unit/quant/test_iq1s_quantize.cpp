// IQ1_S quantizer (lib/quant/iq/iq1s_quantize.hpp): quality against ggml's fixtures, ggml byte
// agreement, determinism, threading, edge rows and argument checks.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/iq/iq1s_block.hpp"
#include "quant/iq/iq1s_quantize.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace strata;
using quant::block_iq1_s;
using quant::kQK_K;

namespace {

struct Case {
    const char* name;
    double ggml_weighted;  // manifest.json rel_rmse_weighted, recomputed below from the dequant file
};
const Case kCases[] = {{"c1_gauss_4x256", 0.43030534763095385},
                       {"c2_rowscale_16x1024", 0.4445420349795002},
                       {"c3_student_t3_8x2048", 0.5487911888137659},
                       {"c4_edge_3x512", 0.5013511133281534}};

std::vector<float> dequantize(const std::vector<block_iq1_s>& blocks) {
    std::vector<float> out(blocks.size() * size_t(kQK_K));
    for (size_t b = 0; b < blocks.size(); ++b)
        quant::iq1s_decode_block(blocks[b], quant::kIq1sGrid, out.data() + b * kQK_K);
    return out;
}

// sqrt(sum w (y - x)^2 / sum w x^2) over rows [r0, r1), float64; w = 1 when weights is empty.
double rel_rmse(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& weights,
                int64_t cols, int64_t r0, int64_t r1) {
    double num = 0, den = 0;
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            const double w = weights.empty() ? 1.0 : double(weights[size_t(c)]);
            const double xv = x[size_t(r * cols + c)], d = double(y[size_t(r * cols + c)]) - xv;
            num += w * d * d;
            den += w * xv * xv;
        }
    return den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
}

std::vector<block_iq1_s> quantize(const std::vector<float>& x, int64_t rows, int64_t cols, const float* imatrix,
                                  int threads = 1, quant::Iq1sQuantizeReport* report = nullptr) {
    std::vector<block_iq1_s> out(static_cast<size_t>(rows * cols / kQK_K));
    auto rep = quant::quantize_iq1s(x.data(), out.data(), rows, cols, imatrix, threads);
    if (report) *report = rep;
    return out;
}

bool same_bytes(const std::vector<block_iq1_s>& a, const std::vector<block_iq1_s>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(block_iq1_s)) == 0;
}

bool all_finite(const std::vector<float>& v) {
    for (float f : v)
        if (!std::isfinite(f)) return false;
    return true;
}

struct Fixture {
    int64_t rows, cols;
    std::vector<float> input, imatrix, dequant;
    std::vector<uint8_t> iq1s;
};

Fixture load(const std::string& name) {
    const auto dir = test::fixtures_dir() / "iq1s";
    auto in = test::read_npy(dir / (name + "_input.npy"));
    Fixture f;
    f.rows = in.shape.at(0);
    f.cols = in.shape.at(1);
    f.input = in.as<float>();
    f.imatrix = test::read_npy(dir / (name + "_imatrix.npy")).as<float>();
    f.dequant = test::read_npy(dir / (name + "_dequant.npy")).as<float>();
    f.iq1s = test::read_npy(dir / (name + "_iq1s.npy")).data;
    return f;
}

// Gaussian or Student-t(3) matrix with a per-row scale, from the printed test seed.
std::vector<float> random_matrix(std::mt19937_64& rng, int64_t rows, int64_t cols, bool heavy) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::student_t_distribution<float> student(3.0f);
    std::uniform_real_distribution<float> log_scale(-4.0f, 3.0f);
    std::vector<float> x(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
        const float s = std::pow(10.0f, log_scale(rng));
        for (int64_t c = 0; c < cols; ++c) x[size_t(r * cols + c)] = s * (heavy ? student(rng) : normal(rng));
    }
    return x;
}

std::vector<float> random_imatrix(std::mt19937_64& rng, int64_t cols) {
    std::uniform_real_distribution<float> u(std::log(0.1f), std::log(10.0f));
    std::vector<float> w(static_cast<size_t>(cols));
    for (auto& v : w) v = std::exp(u(rng));
    return w;
}

}  // namespace

TEST_CASE("IQ1_S quantizer: imatrix-weighted error within 2% of ggml on every fixture case") {
    for (const auto& c : kCases) {
        const std::string name = c.name;
        CAPTURE(name);
        const Fixture f = load(c.name);
        quant::Iq1sQuantizeReport report;
        const auto ours = quantize(f.input, f.rows, f.cols, f.imatrix.data(), 1, &report);
        CHECK(report.used_imatrix);
        const auto deq = dequantize(ours);
        REQUIRE(all_finite(deq));

        const double mine = rel_rmse(f.input, deq, f.imatrix, f.cols, 0, f.rows);
        const double ggml = rel_rmse(f.input, f.dequant, f.imatrix, f.cols, 0, f.rows);
        CAPTURE(mine);
        CAPTURE(ggml);
        CHECK(ggml == doctest::Approx(c.ggml_weighted).epsilon(1e-9));  // the manifest's figure
        CHECK(mine <= 1.02 * ggml);

        // Per-row figures and agreement with ggml's bytes, for the record.
        const size_t blocks = ours.size();
        REQUIRE(f.iq1s.size() == blocks * sizeof(block_iq1_s));
        size_t same_blocks = 0;
        for (size_t b = 0; b < blocks; ++b)
            same_blocks += std::memcmp(&ours[b], f.iq1s.data() + b * sizeof(block_iq1_s), sizeof(block_iq1_s)) == 0;
        std::string rows_msg;
        for (int64_t r = 0; r < f.rows; ++r) {
            const double a = rel_rmse(f.input, deq, f.imatrix, f.cols, r, r + 1);
            const double g = rel_rmse(f.input, f.dequant, f.imatrix, f.cols, r, r + 1);
            rows_msg += "\n  row " + std::to_string(r) + ": strata " + std::to_string(a) + "  ggml " + std::to_string(g);
            if (std::isfinite(g) && g > 0) CHECK(a <= 1.02 * g + 1e-12);
        }
        MESSAGE(name << ": weighted rel RMSE strata " << mine << " ggml " << ggml << " (ratio " << mine / ggml
                       << "); blocks identical to ggml: " << same_blocks << "/" << blocks << rows_msg);
        // The implementation follows ggml's arithmetic order, so the bytes agree exactly.
        CHECK(same_blocks == blocks);
    }
}

TEST_CASE("IQ1_S quantizer: edge rows (all zero, constant, outlier, zero group) stay sane") {
    const Fixture f = load("c4_edge_3x512");
    const auto ours = quantize(f.input, f.rows, f.cols, f.imatrix.data());
    const auto deq = dequantize(ours);
    REQUIRE(all_finite(deq));
    const int64_t nb = f.cols / kQK_K;
    for (int64_t b = 0; b < nb; ++b) CHECK(ours[size_t(b)].d == 0);  // row 0: all zeros -> d = 0
    for (int64_t c = 0; c < f.cols; ++c) CHECK(deq[size_t(c)] == 0.0f);
    // Row 1 (constant 0.75): not exact (ggml: about 0.46) but far from useless.
    CHECK(rel_rmse(f.input, deq, {}, f.cols, 1, 2) < 0.6);
    // Row 2: the 1000.0 outlier sets its block's scale; the other block is unaffected.
    const double outlier_block = rel_rmse(f.input, deq, {}, kQK_K, 2 * nb + 1, 2 * nb + 2);
    CHECK(outlier_block < 1.1);
    CHECK(std::fabs(deq[size_t(2 * f.cols + 300)] - 1000.0f) < 200.0f);
    CHECK(rel_rmse(f.input, deq, {}, kQK_K, 2 * nb, 2 * nb + 1) < 0.7);
}

TEST_CASE("IQ1_S quantizer: deterministic, row by row equals all at once, thread count irrelevant") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const int64_t rows = 7, cols = 1024;
    const auto x = random_matrix(rng, rows, cols, true);
    const auto im = random_imatrix(rng, cols);
    for (const float* imatrix : {im.data(), static_cast<const float*>(nullptr)}) {
        CAPTURE(imatrix != nullptr);
        const auto once = quantize(x, rows, cols, imatrix);
        CHECK(same_bytes(once, quantize(x, rows, cols, imatrix)));
        std::vector<block_iq1_s> by_row(once.size());
        for (int64_t r = 0; r < rows; ++r)
            quant::quantize_row_iq1s(x.data() + r * cols, by_row.data() + r * (cols / kQK_K), cols, imatrix);
        CHECK(same_bytes(once, by_row));
        for (int threads : {0, 2, 3, 64}) {
            CAPTURE(threads);
            CHECK(same_bytes(once, quantize(x, rows, cols, imatrix, threads)));
        }
    }
}

TEST_CASE("IQ1_S quantizer: without an imatrix uniform weights are used and reported") {
    const Fixture f = load("c3_student_t3_8x2048");
    quant::Iq1sQuantizeReport with, without;
    const auto a = quantize(f.input, f.rows, f.cols, f.imatrix.data(), 1, &with);
    const auto b = quantize(f.input, f.rows, f.cols, nullptr, 1, &without);
    CHECK(with.used_imatrix);
    CHECK_FALSE(without.used_imatrix);
    CHECK(without.blocks == f.rows * f.cols / kQK_K);
    CHECK_FALSE(same_bytes(a, b));
    const std::vector<float> ones(static_cast<size_t>(f.cols), 1.0f);
    CHECK(same_bytes(b, quantize(f.input, f.rows, f.cols, ones.data())));
    // Uniform weights optimise the plain error: it must not be worse than the imatrix result's.
    const auto da = dequantize(a), db = dequantize(b);
    CHECK(rel_rmse(f.input, db, {}, f.cols, 0, f.rows) <= rel_rmse(f.input, da, {}, f.cols, 0, f.rows));
}

TEST_CASE("IQ1_S quantizer: fresh random inputs give finite output and reasonable error") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed ^ 0x51ab1e);
    for (bool heavy : {false, true}) {
        CAPTURE(heavy);
        const int64_t rows = 6, cols = 2048;
        const auto x = random_matrix(rng, rows, cols, heavy);
        const auto im = random_imatrix(rng, cols);
        const auto deq_w = dequantize(quantize(x, rows, cols, im.data(), 2));
        const auto deq_u = dequantize(quantize(x, rows, cols, nullptr, 2));
        REQUIRE(all_finite(deq_w));
        REQUIRE(all_finite(deq_u));
        // Rows carry different scales (1e-4..1e3), so judge the mean of the per-row errors. A single
        // Student-t row can exceed 1 when one outlier sets its superblock's scale (ggml does the same).
        double mean_w = 0, mean_u = 0;
        for (int64_t r = 0; r < rows; ++r) {
            CAPTURE(r);
            const double ew = rel_rmse(x, deq_w, im, cols, r, r + 1), eu = rel_rmse(x, deq_u, {}, cols, r, r + 1);
            CHECK(ew < (heavy ? 1.5 : 0.7));
            CHECK(eu < (heavy ? 1.5 : 0.7));
            mean_w += ew / double(rows);
            mean_u += eu / double(rows);
        }
        CHECK(mean_w < 0.7);
        CHECK(mean_u < 0.7);
    }
}

TEST_CASE("IQ1_S quantizer: extreme magnitudes never produce NaN or Inf") {
    std::mt19937_64 rng(test::test_seed());
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float scale : {1e-30f, 1e-11f, 1e-6f, 1e4f, 1e7f, 1e20f, 3e38f}) {
        CAPTURE(scale);
        std::vector<float> x(512);
        for (auto& v : x) v = scale * std::tanh(normal(rng));  // stays below FLT_MAX
        quant::Iq1sQuantizeReport report;
        const auto deq = dequantize(quantize(x, 1, 512, nullptr, 1, &report));
        CHECK(all_finite(deq));
        if (scale >= 1e7f) CHECK(report.clamped_blocks == 2);
        if (scale <= 1e-30f) CHECK(report.zero_blocks == 2);
        if (scale >= 1e-6f && scale <= 1e4f) CHECK(rel_rmse(x, deq, {}, 512, 0, 1) < 0.7);
    }
}

TEST_CASE("IQ1_S quantizer: bad arguments are rejected with invalid_argument") {
    std::vector<float> x(512, 1.0f);
    std::vector<block_iq1_s> out(2);
    auto status_of = [](auto&& fn) {
        try {
            fn();
        } catch (const Error& e) {
            return e.status();
        }
        return Status::ok;
    };
    for (int64_t n : {int64_t(100), int64_t(0), int64_t(-256), int64_t(257)}) {
        CAPTURE(n);
        CHECK(status_of([&] { quant::quantize_row_iq1s(x.data(), out.data(), n, nullptr); }) ==
              Status::invalid_argument);
        CHECK(status_of([&] { quant::quantize_iq1s(x.data(), out.data(), 1, n, nullptr); }) ==
              Status::invalid_argument);
    }
    CHECK(status_of([&] { quant::quantize_row_iq1s(nullptr, out.data(), 256, nullptr); }) == Status::invalid_argument);
    CHECK(status_of([&] { quant::quantize_iq1s(x.data(), nullptr, 1, 256, nullptr); }) == Status::invalid_argument);
    CHECK(status_of([&] { quant::quantize_iq1s(x.data(), out.data(), -1, 256, nullptr); }) == Status::invalid_argument);
    std::vector<float> bad = x;
    bad[17] = NAN;
    CHECK(status_of([&] { quant::quantize_row_iq1s(bad.data(), out.data(), 512, nullptr); }) == Status::invalid_argument);
    bad[17] = INFINITY;
    CHECK(status_of([&] { quant::quantize_iq1s(bad.data(), out.data(), 2, 256, nullptr); }) == Status::invalid_argument);
    std::vector<float> im(512, 1.0f);
    im[3] = -1.0f;
    CHECK(status_of([&] { quant::quantize_row_iq1s(x.data(), out.data(), 512, im.data()); }) == Status::invalid_argument);
}

TEST_CASE("IQ1_S quantizer: single-thread throughput (reported, not enforced)") {
    std::mt19937_64 rng(test::test_seed());
    const int64_t rows = 32, cols = 4096;
    const auto x = random_matrix(rng, rows, cols, false);
    const auto im = random_imatrix(rng, cols);
    quantize(x, 1, cols, im.data());  // build the neighbour tables outside the timing
    const auto t0 = std::chrono::steady_clock::now();
    const auto out = quantize(x, rows, cols, im.data(), 1);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double mb = double(rows * cols) * sizeof(float) / 1e6;
    MESSAGE("IQ1_S quantize, 1 thread: " << mb / s << " MB/s of float32 input (" << rows * cols / s / 1e6
                                         << " M weights/s)");
    CHECK(out.size() == size_t(rows * cols / kQK_K));
}
