// The IQ1_S prefill products (lib/quant/gemm/iq1s_gemm.hpp), AVX-512 VNNI and AVX2: every (row,
// token) output bit-identical to the scalar kernel (ggml's generic one) and the simd one-row kernel,
// on random weights (every index, scale code and sign reachable) and random activations, odd row
// and token counts (partial panels, every token-count template, more than one token chunk), token
// sub-ranges and raw Q8_K blocks with -128.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "quant/dot/iq1s_dot.hpp"
#include "quant/gemm/iq1s_gemm.hpp"
#include "quant/gemm/iq1s_gemm_panel.hpp"
#include "util/cpu_features.hpp"
#include "quant_test_util.hpp"
#include "test_support.hpp"

using namespace strata;

namespace {

struct AlignedBytes {
    explicit AlignedBytes(size_t n) : p(static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64 + 64))) {}
    ~AlignedBytes() { std::free(p); }
    AlignedBytes(const AlignedBytes&) = delete;
    AlignedBytes& operator=(const AlignedBytes&) = delete;
    uint8_t* p;
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The kernels this CPU can run: AVX2 always (given iq1s_gemm_available), AVX-512 VNNI where present.
std::vector<bool> kernels_here() {
    std::vector<bool> k{false};
    if (util::has_avx512_vnni_kernels()) k.push_back(true);
    else MESSAGE("no AVX-512 VNNI here: only the AVX2 kernel is checked");
    return k;
}

}  // namespace

TEST_CASE("IQ1_S GEMM: every (row, token) bit-identical to the scalar dot, for both kernels") {
    if (!quant::iq1s_gemm_available()) {
        MESSAGE("skipped: this CPU (or STRATA_CPU=scalar) has no AVX2");
        return;
    }
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> scale(0.01f, 30.0f);
    for (int64_t cols : {256, 768, 2048})
        for (int64_t rows : {1, 3, 4, 7, 13, 16, 17, 35})
            for (int64_t n_tok : {1, 2, 3, 6, 9, 16, 23, 70}) {
                if (cols == 2048 && rows * n_tok > 300) continue;  // the largest shapes once is enough
                CAPTURE(cols);
                CAPTURE(rows);
                CAPTURE(n_tok);
                const int64_t nb = cols / 256;
                const auto w = test::random_iq1s_matrix(rng, rows, cols);
                std::vector<quant::block_q8_K> x(size_t(n_tok * nb));
                for (int64_t t = 0; t < n_tok; ++t) {
                    if (t % 5 == 4) {  // raw blocks: any int8, -128 included
                        for (int64_t b = 0; b < nb; ++b) x[size_t(t * nb + b)] = test::random_q8k_block(rng);
                        continue;
                    }
                    auto v = test::random_normal(rng, cols);
                    const float s = scale(rng);  // activations of every magnitude
                    for (float& f : v) f *= s;
                    quant::quantize_row_q8_k(v.data(), x.data() + t * nb, cols);
                }
                for (bool avx512 : kernels_here()) {
                CAPTURE(avx512);
                AlignedBytes ap(quant::iq1s_gemm_detail::act_bytes_with(avx512, cols, n_tok));
                quant::iq1s_gemm_detail::pack_act_with(avx512, cols, x.data(), n_tok, ap.p);
                AlignedBytes wp(quant::iq1s_gemm_detail::weight_bytes_with(avx512, cols, rows));
                quant::iq1s_gemm_detail::pack_weights_with(avx512, cols, w.data(), nb, rows, wp.p);
                // All tokens, then a sub-range starting at a token group (y rows padded to catch
                // writes outside the range).
                const int64_t stride = rows + 3;
                std::vector<float> y(size_t(n_tok * stride), -1.0f);
                quant::iq1s_gemm_detail::gemm_with(avx512, cols, wp.p, rows, ap.p, 0, n_tok, y.data(), stride);
                int bad = 0;
                for (int64_t t = 0; t < n_tok; ++t)
                    for (int64_t r = 0; r < stride; ++r) {
                        const float got = y[size_t(t * stride + r)];
                        if (r >= rows) {
                            bad += got != -1.0f;
                            continue;
                        }
                        const float want = quant::vec_dot_iq1s_q8k_scalar(cols, w.data() + r * nb, x.data() + t * nb);
                        const float simd = quant::vec_dot_iq1s_q8k_simd(cols, w.data() + r * nb, x.data() + t * nb);
                        if (!same_bits(got, want) || !same_bits(simd, want)) {
                            if (bad < 3) MESSAGE("row " << r << " token " << t << ": " << got << " vs " << want);
                            ++bad;
                        }
                    }
                CHECK(bad == 0);
                if (n_tok > 2) {
                    std::vector<float> part(size_t(n_tok * stride), -1.0f);
                    quant::iq1s_gemm_detail::gemm_with(avx512, cols, wp.p, rows, ap.p, 2, n_tok - 2, part.data(), stride);
                    CHECK(std::memcmp(part.data(), y.data() + 2 * stride, size_t((n_tok - 2) * stride) * sizeof(float)) == 0);
                }
                }
            }
}

TEST_CASE("IQ1_S GEMM: extreme blocks (largest scales, every weight nonzero, full-range activations)") {
    if (!quant::iq1s_gemm_available()) return;
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const int64_t cols = 512, rows = 5, n_tok = 3, nb = cols / 256;
    auto w = test::random_iq1s_matrix(rng, rows, cols);
    for (auto& b : w)
        for (auto& h : b.qh) h |= 0x7000;  // scale code 7: ls = 15, the largest product
    std::vector<quant::block_q8_K> x(size_t(n_tok * nb));
    for (int64_t t = 0; t < n_tok; ++t) {
        std::vector<float> v(static_cast<size_t>(cols));
        for (int64_t i = 0; i < cols; ++i) v[size_t(i)] = (i + t) % 2 ? -100.0f : 100.0f;  // |q| = 127 everywhere
        quant::quantize_row_q8_k(v.data(), x.data() + t * nb, cols);
    }
    for (bool avx512 : kernels_here()) {
        CAPTURE(avx512);
        AlignedBytes ap(quant::iq1s_gemm_detail::act_bytes_with(avx512, cols, n_tok));
        quant::iq1s_gemm_detail::pack_act_with(avx512, cols, x.data(), n_tok, ap.p);
        AlignedBytes wp(quant::iq1s_gemm_detail::weight_bytes_with(avx512, cols, rows));
        quant::iq1s_gemm_detail::pack_weights_with(avx512, cols, w.data(), nb, rows, wp.p);
        std::vector<float> y(size_t(n_tok * rows));
        quant::iq1s_gemm_detail::gemm_with(avx512, cols, wp.p, rows, ap.p, 0, n_tok, y.data(), rows);
        for (int64_t t = 0; t < n_tok; ++t)
            for (int64_t r = 0; r < rows; ++r)
                CHECK(same_bits(y[size_t(t * rows + r)],
                                quant::vec_dot_iq1s_q8k_scalar(cols, w.data() + r * nb, x.data() + t * nb)));
    }
}

// The AVX-512 panel byte for byte against the layout written out from the format: quad k of row r
// is ls * grid + 16 of weights 4k..4k+3, step k's int16 pair ls * sign - 128 of sub-blocks 2k and
// 2k+1, d as f32; rows past n_valid all zero. Every row count, rows spread over several blocks.
TEST_CASE("IQ1_S GEMM: the AVX-512 packer writes the panel layout, partial panels zeroed") {
    if (!quant::iq1s_gemm_available() || !util::has_avx512_vnni_kernels()) {
        MESSAGE("no AVX-512 VNNI here: the packer is not run");
        return;
    }
    using namespace quant::iq1s_gemm_detail;
    const uint64_t seed = test::test_seed();
    std::mt19937_64 rng(seed);
    constexpr int64_t kBlocksPerRow = 3;
    for (int n_valid = 1; n_valid <= kPanelRows; ++n_valid) {
        INFO("seed " << seed << ", rows " << n_valid);
        const auto w = test::random_iq1s_matrix(rng, kPanelRows, kBlocksPerRow * quant::kQK_K);
        const int64_t b = int64_t(rng() % kBlocksPerRow);
        AlignedBytes mem(sizeof(RowPanel));
        auto* p = reinterpret_cast<RowPanel*>(mem.p);
        std::memset(p, 0xa5, sizeof *p);  // every byte must be written
        pack_panel_avx512(w.data(), kBlocksPerRow, n_valid, b, *p);
        int wrong = 0;
        for (int r = 0; r < kPanelRows; ++r) {
            const bool valid = r < n_valid;
            const quant::block_iq1_s& x = w[size_t(r * kBlocksPerRow + b)];
            for (int k = 0; k < 64; ++k)
                for (int j = 0; j < 4; ++j) {
                    const int i = 4 * k + j, g = i / 8, s = i / 32;
                    const int v = quant::iq1s_grid_value(quant::kIq1sGrid[quant::iq1s_group_index(x, g)], i % 8);
                    const int expect = valid ? quant::iq1s_sub_scale(x, s) * v + 16 : 0;
                    wrong += p->w[k][r][j] != expect;
                }
            for (int k = 0; k < 4; ++k)
                for (int h = 0; h < 2; ++h) {
                    const int s = 2 * k + h;
                    const int sign = (x.qh[s] & 0x8000u) ? -1 : 1;
                    wrong += p->lsg[k][r][h] != (valid ? quant::iq1s_sub_scale(x, s) * sign - 128 : 0);
                }
            wrong += !same_bits(p->d[r], valid ? quant::f16_to_f32(x.d) : 0.0f);
        }
        CHECK(wrong == 0);
    }
}
