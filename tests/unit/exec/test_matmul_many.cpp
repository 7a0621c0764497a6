// CpuBackend::matmul_many against one matmul call per job: jobs that read the same activations
// share one quantization (and for the IQ1_S GEMM one packing) of them, which must not change a
// single bit of any output, whatever mix of types, token counts and widths reads those rows.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "exec/cpu_backend.hpp"
#include "quant/formats.hpp"
#include "quant/type_ids.hpp"
#include "quant/quant_test_util.hpp"
#include "test_support.hpp"

using namespace strata;

namespace {

struct Matrix {
    std::vector<uint8_t> bytes;
    exec::WeightView w;
};

// rows x cols weights of `type`, quantized from N(0, 1) floats.
Matrix random_matrix(std::mt19937_64& rng, uint32_t type, int64_t rows, int64_t cols) {
    Matrix m;
    const std::vector<float> f = test::random_normal(rng, rows * cols);
    const size_t row_bytes = quant::row_size(type, cols);
    m.bytes.resize(row_bytes * size_t(rows));
    for (int64_t r = 0; r < rows; ++r)
        quant::quantize_row(type, f.data() + r * cols, m.bytes.data() + size_t(r) * row_bytes, cols, nullptr);
    m.w.name = "w";
    m.w.type = type;
    m.w.rows = rows;
    m.w.cols = cols;
    m.w.row_bytes = int64_t(row_bytes);
    m.w.data = m.bytes.data();
    m.w.nbytes = m.bytes.size();
    m.w.mat_stride = m.w.nbytes;
    return m;
}

}  // namespace

TEST_CASE("matmul_many: jobs over the same activations give the bits of separate matmul calls") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    constexpr int64_t kCols = 512, kTokens = 19;  // 19: not a whole number of the GEMM's token groups
    const std::vector<float> x = test::random_normal(rng, kTokens * kCols);
    const std::vector<float> other = test::random_normal(rng, kTokens * kCols);
    // Two IQ1_S products (the GEMM, sharing the packed rows), Q4_K and Q6_K (Q8_K rows too, but
    // not the GEMM's: they must not borrow from the IQ1_S jobs' packing), Q8_0 (its own type),
    // the same rows read with fewer tokens, and other rows.
    std::vector<Matrix> m;
    m.push_back(random_matrix(rng, quant::kTypeIQ1_S, 37, kCols));
    m.push_back(random_matrix(rng, quant::kTypeIQ1_S, 16, kCols));
    m.push_back(random_matrix(rng, quant::kTypeQ4_K, 21, kCols));
    m.push_back(random_matrix(rng, quant::kTypeQ6_K, 9, kCols));
    m.push_back(random_matrix(rng, quant::kTypeQ8_0, 18, kCols));
    m.push_back(random_matrix(rng, quant::kTypeIQ1_S, 20, kCols));
    m.push_back(random_matrix(rng, quant::kTypeIQ1_S, 24, kCols));
    struct Spec {
        size_t matrix;
        const float* x;
        int64_t n_tokens;
    };
    const std::vector<Spec> specs = {{2, x.data(), kTokens},     {0, x.data(), kTokens}, {1, x.data(), kTokens},
                                     {3, x.data(), kTokens},     {4, x.data(), kTokens}, {5, x.data(), 5},
                                     {6, other.data(), kTokens}, {5, x.data(), kTokens}, {4, other.data(), 2}};
    for (int threads : {1, 2, 3}) {
        CAPTURE(threads);
        exec::CpuBackend backend(threads);
        std::vector<std::vector<float>> together(specs.size()), alone(specs.size());
        std::vector<exec::MatmulJob> jobs;
        for (size_t j = 0; j < specs.size(); ++j) {
            const exec::WeightView& w = m[specs[j].matrix].w;
            together[j].assign(size_t(specs[j].n_tokens * w.rows), -1.0f);
            alone[j].assign(together[j].size(), -2.0f);
            jobs.push_back({&w, specs[j].x, specs[j].n_tokens, together[j].data()});
        }
        backend.matmul_many(jobs);
        for (size_t j = 0; j < specs.size(); ++j) {
            CAPTURE(j);
            backend.matmul(m[specs[j].matrix].w, specs[j].x, specs[j].n_tokens, alone[j].data());
            CHECK(std::memcmp(together[j].data(), alone[j].data(), alone[j].size() * sizeof(float)) == 0);
        }
        // Run twice: the second call reuses the first's buffers.
        backend.matmul_many(jobs);
        for (size_t j = 0; j < specs.size(); ++j)
            CHECK(std::memcmp(together[j].data(), alone[j].data(), alone[j].size() * sizeof(float)) == 0);
    }
}
