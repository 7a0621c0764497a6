// Multi-token dots (lib/quant/gemm_tokens*): every (row, token) output bit for bit equal to the
// type's single dot (best_vec_dot), for odd row / token counts, every register-block shape, row
// lengths with and without the kernels' tail blocks, padded row strides; and close to the scalar
// reference (ggml's generic C).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/formats.hpp"
#include "quant/gemm/gemm_tokens.hpp"
#include "quant/type_ids.hpp"
#include "quant/type_traits.hpp"
#include "quant_test_util.hpp"
#include "test_support.hpp"
#include "util/cpu_features.hpp"

using namespace strata;

namespace {

// The types that must have a multi-token kernel on an AVX2 CPU.
const uint32_t kTypes[] = {quant::kTypeQ8_0, quant::kTypeQ4_0, quant::kTypeQ4_1, quant::kTypeQ5_0, quant::kTypeQ5_1,
                           quant::kTypeQ4_K, quant::kTypeQ5_K, quant::kTypeQ6_K, quant::kTypeIQ4_XS};

// rows rows of cols weights quantized from N(0,1) floats by the type's quantizer (a few rows
// scaled up or down so that block scales differ widely), each row padded to stride bytes with
// bytes the kernel must not read as weights.
std::vector<uint8_t> quantized_rows(const quant::TypeTraits& t, int64_t rows, int64_t cols, size_t stride,
                                    std::mt19937_64& rng) {
    std::vector<uint8_t> out(size_t(rows) * stride, 0xA5);
    for (int64_t r = 0; r < rows; ++r) {
        std::vector<float> v = test::random_normal(rng, cols);
        const float scale = std::pow(10.0f, std::uniform_real_distribution<float>(-2.0f, 1.0f)(rng));
        for (float& f : v) f *= scale;
        t.quantize(v.data(), out.data() + size_t(r) * stride, cols, nullptr);
    }
    return out;
}

struct Case {
    const quant::TypeTraits* w;
    const quant::TypeTraits* act;
    quant::MultiDot md;
    int64_t cols;
    size_t w_stride, x_stride;
    std::vector<uint8_t> weights, acts;
    std::vector<float> wd, xd;  // decoded, for the reference tolerance
};

Case make_case(uint32_t type, quant::MultiDotIsa isa, int64_t rows, int64_t tokens, int64_t cols, std::mt19937_64& rng) {
    Case c;
    c.w = quant::find_type_traits(type);
    REQUIRE(c.w);
    c.act = quant::find_type_traits(c.w->dot_type);
    REQUIRE(c.act);
    c.md = quant::find_multi_dot(*c.w, false, isa);
    c.cols = cols;
    c.w_stride = quant::row_size(type, cols) + 8 * (rng() % 3);  // padded or not
    c.x_stride = quant::row_size(c.w->dot_type, cols) + 4 * (rng() % 3);
    c.weights = quantized_rows(*c.w, rows, cols, c.w_stride, rng);
    c.acts = quantized_rows(*c.act, tokens, cols, c.x_stride, rng);
    c.wd.resize(size_t(rows * cols));
    c.xd.resize(size_t(tokens * cols));
    for (int64_t r = 0; r < rows; ++r) c.w->decode(c.weights.data() + size_t(r) * c.w_stride, c.wd.data() + r * cols, cols);
    for (int64_t t = 0; t < tokens; ++t) c.act->decode(c.acts.data() + size_t(t) * c.x_stride, c.xd.data() + t * cols, cols);
    return c;
}

// The kernel over rows x tokens as a caller tiles it: register blocks of max_rows x max_tokens,
// smaller ones at the edges. y[t * y_stride + r]; y_stride > rows leaves a gap that must stay.
std::vector<float> run_tiled(const Case& c, int64_t rows, int64_t tokens, int64_t y_stride) {
    std::vector<float> y(size_t(tokens * y_stride), std::nanf(""));
    for (int64_t t0 = 0; t0 < tokens; t0 += c.md.max_tokens)
        for (int64_t r0 = 0; r0 < rows; r0 += c.md.max_rows) {
            const int nr = int(std::min<int64_t>(c.md.max_rows, rows - r0));
            const int nt = int(std::min<int64_t>(c.md.max_tokens, tokens - t0));
            c.md.fn(c.cols, c.weights.data() + size_t(r0) * c.w_stride, c.w_stride, nr,
                    c.acts.data() + size_t(t0) * c.x_stride, c.x_stride, nt, y.data() + t0 * y_stride + r0, y_stride);
        }
    return y;
}

void check_against_single(const Case& c, int64_t rows, int64_t tokens, const std::vector<float>& y, int64_t y_stride) {
    const quant::VecDotFn single = quant::best_vec_dot(*c.w);
    REQUIRE(bool(single == c.w->dot_avx2));  // the contract is against the AVX2 kernel
    for (int64_t t = 0; t < tokens; ++t)
        for (int64_t r = 0; r < rows; ++r) {
            CAPTURE(r);
            CAPTURE(t);
            const void* wr = c.weights.data() + size_t(r) * c.w_stride;
            const void* xt = c.acts.data() + size_t(t) * c.x_stride;
            const float want = single(c.cols, wr, xt);
            const float got = y[size_t(t * y_stride + r)];
            INFO("got " << got << " want " << want);
            REQUIRE(std::memcmp(&got, &want, sizeof got) == 0);
            // The scalar reference differs only by float rounding order: within a few units of
            // float32 rounding of the sum of |terms|.
            const float ref = c.w->dot_scalar(c.cols, wr, xt);
            double terms = 0;
            for (int64_t j = 0; j < c.cols; ++j)
                terms += std::fabs(double(c.wd[size_t(r * c.cols + j)]) * c.xd[size_t(t * c.cols + j)]);
            CHECK(std::fabs(double(got) - ref) <= 1e-5 * terms + 1e-30);
        }
    for (int64_t t = 0; t < tokens; ++t)  // the gap between a token's outputs and the next's
        for (int64_t r = rows; r < y_stride; ++r) CHECK(std::isnan(y[size_t(t * y_stride + r)]));
}

bool has_kernel(const quant::MultiDot& md) { return md.fn != nullptr; }

// The instruction sets this CPU runs (each must give the single AVX2 dot's results).
std::vector<quant::MultiDotIsa> isas() {
    std::vector<quant::MultiDotIsa> out{quant::MultiDotIsa::avx2};
    if (util::has_avx512_vnni_kernels()) out.push_back(quant::MultiDotIsa::avx512);
    else MESSAGE("AVX-512 VNNI kernels not tested: this CPU lacks AVX-512 F/BW/VL/DQ/VNNI");
    return out;
}

const char* isa_name(quant::MultiDotIsa isa) { return isa == quant::MultiDotIsa::avx512 ? "avx512" : "avx2"; }

std::vector<int64_t> row_lengths(const quant::TypeTraits& t) {
    // Legacy blocks: 1, 3, 4, 5, 7, 13, 67 (the kernels step 8 blocks, then 4, then one by one).
    if (t.block_elements == 32) return {32, 96, 128, 160, 224, 416, 2048 + 96};
    return {256, 512, 768, 1280};
}

}  // namespace

TEST_CASE("multi-token dots equal the single AVX2 dot bit for bit, for odd row and token counts") {
    if (!test::avx2_kernels_or_skip()) return;
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (quant::MultiDotIsa isa : isas()) {
        for (uint32_t type : kTypes) {
            CAPTURE(std::string(isa_name(isa)));
            const quant::TypeTraits& traits = *quant::find_type_traits(type);
            CAPTURE(std::string(traits.name));
            const quant::MultiDot md = quant::find_multi_dot(traits, false, isa);
            REQUIRE(has_kernel(md));
            REQUIRE(md.max_rows >= 1);
            REQUIRE(md.max_tokens >= 1);
            REQUIRE(md.max_rows <= quant::kMultiDotMaxRows);
            REQUIRE(md.max_tokens <= quant::kMultiDotMaxTokens);
            for (int64_t cols : row_lengths(traits)) {
                CAPTURE(cols);
                const int64_t rows = 1 + int64_t(rng() % 9), tokens = 1 + int64_t(rng() % 7);
                CAPTURE(rows);
                CAPTURE(tokens);
                const Case c = make_case(type, isa, rows, tokens, cols, rng);
                const int64_t y_stride = rows + int64_t(rng() % 3);
                check_against_single(c, rows, tokens, run_tiled(c, rows, tokens, y_stride), y_stride);
            }
        }
    }
}

TEST_CASE("multi-token dots: every register-block shape, and rows 1..9 by tokens 1..7") {
    if (!test::avx2_kernels_or_skip()) return;
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    for (quant::MultiDotIsa isa : isas()) {
        for (uint32_t type : kTypes) {
            CAPTURE(std::string(isa_name(isa)));
            const quant::TypeTraits& traits = *quant::find_type_traits(type);
            CAPTURE(std::string(traits.name));
            const quant::MultiDot md = quant::find_multi_dot(traits, false, isa);
            REQUIRE(has_kernel(md));
            const int64_t cols = traits.block_elements == 32 ? 32 * 7 : 512;  // a tail of 3 legacy blocks
            const Case c = make_case(type, isa, quant::kMultiDotMaxRows + 1, quant::kMultiDotMaxTokens + 1, cols, rng);
            // Each block shape called directly on the first rows and tokens.
            for (int nr = 1; nr <= md.max_rows; ++nr)
                for (int nt = 1; nt <= md.max_tokens; ++nt) {
                    CAPTURE(nr);
                    CAPTURE(nt);
                    std::vector<float> y(size_t(nt * 11), std::nanf(""));
                    md.fn(cols, c.weights.data(), c.w_stride, nr, c.acts.data(), c.x_stride, nt, y.data(), 11);
                    check_against_single(c, nr, nt, y, 11);
                }
            for (int64_t rows = 1; rows <= 9; ++rows)
                for (int64_t tokens = 1; tokens <= 7; ++tokens) {
                    CAPTURE(rows);
                    CAPTURE(tokens);
                    check_against_single(c, rows, tokens, run_tiled(c, rows, tokens, rows), rows);
                }
        }
    }
}

TEST_CASE("find_multi_dot: nothing for the scalar path or types without a kernel") {
    const quant::TypeTraits& q8 = *quant::find_type_traits(quant::kTypeQ8_0);
    CHECK_FALSE(has_kernel(quant::find_multi_dot(q8, /*scalar=*/true)));
    CHECK_FALSE(has_kernel(quant::find_multi_dot(*quant::find_type_traits(quant::kTypeF32))));
    CHECK_FALSE(has_kernel(quant::find_multi_dot(*quant::find_type_traits(quant::kTypeTQ1_0))));  // no AVX2 dot
    if (!test::have_avx2_kernels()) CHECK_FALSE(has_kernel(quant::find_multi_dot(q8)));
    if (!util::has_avx512_vnni_kernels())
        CHECK_FALSE(has_kernel(quant::find_multi_dot(q8, false, quant::MultiDotIsa::avx512)));
    // best: the AVX-512 kernels where the CPU has them.
    if (util::has_avx512_vnni_kernels())
        CHECK(bool(quant::find_multi_dot(q8).fn == quant::find_multi_dot(q8, false, quant::MultiDotIsa::avx512).fn));
}
