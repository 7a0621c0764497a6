// IQ1_S block decode (lib/quant/iq/iq1s_block.hpp) against ggml's to_float, bit for bit.
#include <doctest/doctest.h>

#include <cstring>

#include "quant/iq/iq1s_block.hpp"
#include "test_support.hpp"

using namespace strata;

TEST_CASE("the generated IQ1_S grid equals ggml's iq1s_grid fixture entry by entry") {
    auto grid = test::read_npy(test::fixtures_dir() / "iq1s" / "iq1s_grid.npy").as<uint64_t>();
    REQUIRE(grid.size() == quant::kIq1sGridSize);
    for (int i = 0; i < quant::kIq1sGridSize; ++i) {
        CAPTURE(i);
        CHECK(grid[size_t(i)] == quant::kIq1sGrid[i]);
    }
}

TEST_CASE("IQ1_S decode reproduces ggml's dequantized fixtures bit for bit, -0.0 included") {
    for (const char* name : test::kIq1sCases) {
        CAPTURE(name);
        auto blocks = test::read_npy(test::iq1s_fixture(name, "iq1s"));
        auto expected = test::read_npy(test::iq1s_fixture(name, "dequant"));
        const auto values = expected.as<uint32_t>();  // compare bit patterns
        const size_t n_blocks = blocks.data.size() / sizeof(quant::block_iq1_s);
        REQUIRE(n_blocks * quant::kQK_K == values.size());
        size_t mismatches = 0;
        for (size_t b = 0; b < n_blocks; ++b) {
            quant::block_iq1_s block;
            std::memcpy(&block, blocks.data.data() + b * sizeof block, sizeof block);
            float out[quant::kQK_K];
            quant::iq1s_decode_block(block, quant::kIq1sGrid, out);
            for (int j = 0; j < quant::kQK_K; ++j)
                mismatches += quant::f32_to_bits(out[j]) != values[b * quant::kQK_K + size_t(j)];
        }
        CHECK(mismatches == 0);
    }
}
