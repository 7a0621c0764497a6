// quantize_row_q8_k's AVX-512 path (q8_k_avx512.cpp) against the portable loop, bit for bit:
// random magnitudes, ties for the largest magnitude (the first must win), zero blocks, single
// nonzero values and subnormals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/codecs/q8_k.hpp"
#include "test_support.hpp"
#include "util/cpu_features.hpp"

using namespace strata;

TEST_CASE("Q8_K quantization: the dispatched kernel gives the portable loop's bits") {
    if (!util::has_avx512_vnni_kernels()) MESSAGE("no AVX-512 here: both calls run the portable loop");
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    std::uniform_real_distribution<float> exponent(-30.0f, 30.0f);
    const int64_t nb = 64, n = nb * 256;
    for (int round = 0; round < 40; ++round) {
        std::vector<float> x(static_cast<size_t>(n));
        for (int64_t b = 0; b < nb; ++b) {
            float* v = x.data() + b * 256;
            const float scale = std::exp2(exponent(rng));
            for (int j = 0; j < 256; ++j) v[j] = normal(rng) * scale;
            switch (rng() % 6) {
                case 0: std::fill(v, v + 256, 0.0f); break;                 // all zero
                case 1: {                                                   // ties, both signs
                    const float m = std::fabs(v[rng() % 256]) * 4.0f;
                    v[rng() % 256] = -m;
                    v[rng() % 256] = m;
                    break;
                }
                case 2: {                                                   // one nonzero value
                    std::fill(v, v + 256, 0.0f);
                    v[rng() % 256] = normal(rng);
                    break;
                }
                case 3:
                    for (int j = 0; j < 256; ++j) v[j] = normal(rng) * 1e-40f;  // subnormals
                    break;
                default: break;
            }
        }
        std::vector<quant::block_q8_K> got(static_cast<size_t>(nb)), want(static_cast<size_t>(nb));
        quant::quantize_row_q8_k(x.data(), got.data(), n);
        quant::quantize_row_q8_k_portable(x.data(), want.data(), n);
        for (int64_t b = 0; b < nb; ++b) {
            CAPTURE(b);
            CHECK(std::memcmp(&got[size_t(b)], &want[size_t(b)], sizeof(quant::block_q8_K)) == 0);
        }
    }
}
