// IQ1_S x Q8_K dot kernels (lib/quant/dot/iq1s_dot.hpp): exact integers per superblock, and the float
// results of the scalar and AVX2 kernels against ggml's two kernels on the fixtures.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "quant/dot/iq1s_dot.hpp"
#include "quant/formats.hpp"
#include "quant/type_ids.hpp"
#include "quant_test_util.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace strata;

namespace {

// The test's own decoding of the raw 50 bytes (not the library's helpers): the 256 grid values
// from the fixture grid table, the eight scales 2l+1 and the eight delta signs.
struct Decoded {
    int grid[256];
    int ls[8];
    int sign[8];
};

Decoded decode_raw(const uint8_t* raw, const std::vector<uint64_t>& grid_table) {
    Decoded d{};
    for (int s = 0; s < 8; ++s) {
        const unsigned qh = unsigned(raw[34 + 2 * s]) | unsigned(raw[35 + 2 * s]) << 8;
        d.ls[s] = 2 * int((qh >> 12) & 7) + 1;
        d.sign[s] = (qh & 0x8000u) ? -1 : 1;
        for (int k = 0; k < 4; ++k) {
            const unsigned index = raw[2 + 4 * s + k] | ((qh >> (3 * k)) & 7u) << 8;
            for (int j = 0; j < 8; ++j)
                d.grid[32 * s + 8 * k + j] = int8_t(uint8_t(grid_table[index] >> (8 * j)));
        }
    }
    return d;
}

// Expected integers from the decoded values and the q8 bytes (bsums recomputed from qs here).
struct Expected {
    int64_t lane[8];
    int64_t sumi, sumi1;
};

Expected expected_sums(const Decoded& w, const uint8_t* q8k) {
    Expected e{};
    const auto* qs = reinterpret_cast<const int8_t*>(q8k + 4);
    for (int s = 0; s < 8; ++s) {
        int64_t qsum = 0;
        for (int j = 0; j < 32; ++j) {
            const int64_t p = int64_t(w.ls[s]) * w.grid[32 * s + j] * qs[32 * s + j];
            e.lane[j / 4] += p;
            e.sumi += p;
            qsum += qs[32 * s + j];
        }
        e.sumi1 += int64_t(w.ls[s]) * w.sign[s] * qsum;
    }
    return e;
}

void check_sums(const quant::block_iq1_s& x, const quant::block_q8_K& y, const Expected& e) {
    const auto sums = quant::iq1s_block_sums(x, quant::kIq1sGrid, y.qs, y.bsums);
    CHECK(sums.sumi == e.sumi);
    CHECK(sums.sumi1 == e.sumi1);
    const auto scalar = quant::iq1s_lane_sums_scalar(x, y);
    for (int k = 0; k < 8; ++k) CHECK(scalar.lane[k] == e.lane[k]);
    CHECK(scalar.sumi1 == e.sumi1);
    if (test::have_avx2_kernels()) {
        const auto avx2 = quant::iq1s_lane_sums_avx2(x, y);
        for (int k = 0; k < 8; ++k) CHECK(avx2.lane[k] == e.lane[k]);
        CHECK(avx2.sumi1 == e.sumi1);
    }
}

}  // namespace

TEST_CASE("per-superblock integers of every fixture block equal the ones derived from decoded values") {
    const auto grid = test::read_npy(test::fixtures_dir() / "iq1s" / "iq1s_grid.npy").as<uint64_t>();
    for (const char* name : test::kIq1sCases) {
        CAPTURE(name);
        const auto w = test::read_npy(test::iq1s_fixture(name, "iq1s")).data;
        const auto xq = test::read_npy(test::iq1s_fixture(name, "x_q8k")).data;
        const size_t nb = xq.size() / 292;
        const size_t rows = w.size() / (50 * nb);
        for (size_t r = 0; r < rows; ++r)
            for (size_t b = 0; b < nb; ++b) {
                CAPTURE(r);
                CAPTURE(b);
                const uint8_t* raw = w.data() + (r * nb + b) * 50;
                quant::block_iq1_s x;
                quant::block_q8_K y;
                std::memcpy(&x, raw, sizeof x);
                std::memcpy(&y, xq.data() + b * 292, sizeof y);
                check_sums(x, y, expected_sums(decode_raw(raw, grid), xq.data() + b * 292));
            }
    }
}

TEST_CASE("per-superblock integers agree with the derivation on random blocks, extreme int8 included") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const auto grid = test::read_npy(test::fixtures_dir() / "iq1s" / "iq1s_grid.npy").as<uint64_t>();
    for (int t = 0; t < 2000; ++t) {
        CAPTURE(t);
        const auto x = test::random_iq1s_block(rng);
        auto y = test::random_q8k_block(rng);
        if (t == 0) {  // the integer extremes: every q8 = -128 against all-ones scale 15
            for (auto& q : y.qs) q = -128;
            for (auto& b : y.bsums) b = -2048;
        }
        uint8_t raw[50];
        std::memcpy(raw, &x, 50);
        uint8_t q8raw[292];
        std::memcpy(q8raw, &y, 292);
        check_sums(x, y, expected_sums(decode_raw(raw, grid), q8raw));
    }
}

TEST_CASE("the scalar and simd kernels are bit-exact to ggml's generic kernel and the AVX2 kernel to ggml's vec_dot") {
    for (const char* name : test::kIq1sCases) {
        CAPTURE(name);
        const auto w = test::read_npy(test::iq1s_fixture(name, "iq1s")).data;
        const auto xq = test::read_npy(test::iq1s_fixture(name, "x_q8k")).data;
        const auto generic = test::read_npy(test::iq1s_fixture(name, "dot_generic")).as<float>();
        const auto vec_dot = test::read_npy(test::iq1s_fixture(name, "dot_vec_dot")).as<float>();
        const auto exact = test::read_npy(test::iq1s_fixture(name, "dot_deq_q8k_f64")).as<double>();
        const auto deq = test::read_npy(test::iq1s_fixture(name, "dequant")).as<float>();
        const int64_t n = int64_t(xq.size() / 292) * 256;
        const auto yq = test::blocks_from_bytes<quant::block_q8_K>(xq);
        std::vector<float> xd(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) xd[size_t(j)] = yq[size_t(j / 256)].d * float(yq[size_t(j / 256)].qs[j % 256]);
        for (size_t r = 0; r < generic.size(); ++r) {
            CAPTURE(r);
            const uint8_t* row = w.data() + r * size_t(n / 256) * 50;
            const float scalar = quant::vec_dot_iq1s_q8k(n, row, xq.data(), quant::Iq1sKernel::scalar);
            CHECK(quant::f32_to_bits(scalar) == quant::f32_to_bits(generic[r]));
            // Tolerance against the exact value: 1e-6 * max(|exact|, sum of |terms|); a row whose
            // terms are all zero (d = 0) must give exactly 0.
            double terms = 0;
            for (int64_t j = 0; j < n; ++j) terms += std::fabs(double(deq[r * size_t(n) + size_t(j)]) * xd[size_t(j)]);
            const double bound = 1e-6 * std::max(std::fabs(exact[r]), terms);
            CHECK(std::fabs(double(scalar) - exact[r]) <= bound);
            CHECK(std::fabs(double(scalar) - double(generic[r])) <= bound);
            if (test::have_avx2_kernels()) {
                const float avx2 = quant::vec_dot_iq1s_q8k(n, row, xq.data(), quant::Iq1sKernel::avx2);
                CHECK(quant::f32_to_bits(avx2) == quant::f32_to_bits(vec_dot[r]));
                CHECK(std::fabs(double(avx2) - exact[r]) <= bound);
            }
            if (test::have_avx2_kernels()) {  // the scalar kernel's bits with AVX2 integer work
                const float simd = quant::vec_dot_iq1s_q8k(n, row, xq.data(), quant::Iq1sKernel::simd);
                CHECK(quant::f32_to_bits(simd) == quant::f32_to_bits(generic[r]));
            }
            const float best = quant::vec_dot_iq1s_q8k(n, row, xq.data());
            CHECK(quant::f32_to_bits(best) == quant::f32_to_bits(generic[r]));
        }
    }
}

TEST_CASE("scalar and AVX2 dots agree to float32 accumulation error on long random rows") {
    if (!test::avx2_kernels_or_skip()) return;
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (int64_t n : {256, 768, 4096, 16384}) {
        CAPTURE(n);
        const auto w = test::random_iq1s_matrix(rng, 1, n);
        std::vector<quant::block_q8_K> y(size_t(n / 256));
        for (auto& b : y) b = test::random_q8k_block(rng);
        const float s = quant::vec_dot_iq1s_q8k_scalar(n, w.data(), y.data());
        const float a = quant::vec_dot_iq1s_q8k_avx2(n, w.data(), y.data());
        // The bound scales with the sum of |w_i * x_i| (the dequantized products): the kernels add
        // sub-block partial sums in different orders, and those can cancel, so |sumi| of a whole
        // block would understate the rounding error a correct kernel may make.
        std::vector<float> wf(static_cast<size_t>(n));
        quant::dequantize_row(quant::kTypeIQ1_S, w.data(), wf.data(), n);
        double terms = 0;
        for (int64_t i = 0; i < n; ++i) {
            const auto& yb = y[size_t(i / 256)];
            terms += std::fabs(double(wf[size_t(i)]) * yb.d * yb.qs[i % 256]);
        }
        CHECK(std::fabs(double(s) - double(a)) <= 1e-6 * terms);
    }
}

TEST_CASE("the checked dot entry point rejects bad lengths and null operands") {
    quant::block_iq1_s x{};
    quant::block_q8_K y{};
    CHECK_THROWS_AS(quant::vec_dot_iq1s_q8k(255, &x, &y), Error);
    CHECK_THROWS_AS(quant::vec_dot_iq1s_q8k(0, &x, &y), Error);
    CHECK_THROWS_AS(quant::vec_dot_iq1s_q8k(256, nullptr, &y), Error);
    CHECK(quant::resolve_iq1s_kernel(quant::Iq1sKernel::best) ==
          (test::have_avx2_kernels() ? quant::Iq1sKernel::simd : quant::Iq1sKernel::scalar));
}

namespace {

using RowsKernel = void (*)(int64_t, const quant::block_iq1_s*, int64_t, int64_t, const quant::block_q8_K*, float*);
using OneRowKernel = float (*)(int64_t, const quant::block_iq1_s*, const quant::block_q8_K*);

// A grouped row kernel against the fixtures' `fixture` dots and, on random rows (1..11, so every
// grouping of four, two and one; rows not adjacent), against its one-row kernel, bit for bit.
void check_rows_kernel(RowsKernel rows_kernel, OneRowKernel one_row, const char* fixture, int64_t n, int64_t stride) {
    for (const char* name : test::kIq1sCases) {
        CAPTURE(name);
        const auto w = test::blocks_from_bytes<quant::block_iq1_s>(test::read_npy(test::iq1s_fixture(name, "iq1s")).data);
        const auto y = test::blocks_from_bytes<quant::block_q8_K>(test::read_npy(test::iq1s_fixture(name, "x_q8k")).data);
        const auto want = test::read_npy(test::iq1s_fixture(name, fixture)).as<float>();
        const int64_t nb = int64_t(y.size());
        std::vector<float> out(want.size());
        rows_kernel(nb * 256, w.data(), nb, int64_t(out.size()), y.data(), out.data());
        for (size_t r = 0; r < out.size(); ++r) {
            CAPTURE(r);
            CHECK(quant::f32_to_bits(out[r]) == quant::f32_to_bits(want[r]));
        }
    }
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (int64_t rows = 1; rows <= 11; ++rows) {
        CAPTURE(rows);
        std::vector<quant::block_iq1_s> w(size_t(rows * stride));
        for (auto& b : w) b = test::random_iq1s_block(rng);
        std::vector<quant::block_q8_K> y(size_t(n / 256));
        for (auto& b : y) b = test::random_q8k_block(rng);
        std::vector<float> out(static_cast<size_t>(rows), -1.0f);
        rows_kernel(n, w.data(), stride, rows, y.data(), out.data());
        for (int64_t r = 0; r < rows; ++r) {
            CAPTURE(r);
            const float one = one_row(n, w.data() + r * stride, y.data());
            CHECK(quant::f32_to_bits(out[size_t(r)]) == quant::f32_to_bits(one));
        }
    }
}

}  // namespace

TEST_CASE("the grouped AVX2 row kernel gives each row bit-identically what the one-row kernel gives") {
    if (!test::avx2_kernels_or_skip()) return;
    // Every row must equal ggml's vec_dot bit for bit; a stride wider than the row.
    check_rows_kernel(quant::vec_dot_iq1s_q8k_avx2_rows, quant::vec_dot_iq1s_q8k_avx2, "dot_vec_dot", 768, 5);
}

TEST_CASE("the grouped simd row kernel gives every row the scalar kernel's bits") {
    if (!test::avx2_kernels_or_skip()) return;
    check_rows_kernel(quant::vec_dot_iq1s_q8k_simd_rows, quant::vec_dot_iq1s_q8k_scalar, "dot_generic", 1280, 7);
}
