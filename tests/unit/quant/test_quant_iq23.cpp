// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (lib/quant/iq/iq2_block.hpp, iq3_block.hpp): one block of
// each decoded by hand; the Q8_K dots' exact integers per superblock against integers the test
// derives from decoded weights; long rows against a float64 product; the AVX2 kernels against the
// scalar ones. (Bit-exactness of decoding against the gguf package is the Python interop test's.)
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

#include "quant/half.hpp"
#include "quant/iq/iq2_block.hpp"
#include "quant/iq/iq3_block.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant_test_util.hpp"
#include "test_support.hpp"

using namespace strata;

namespace {

using test::check_equal;
using test::decode;
using test::DecodeFn;
using test::DotFn;
using test::expect;

// The header's block sum of one raw block (what every kernel must reproduce).
template <typename Block, typename Sum>
int64_t block_sum_of(const uint8_t* raw, const int8_t* q8, Sum sum) {
    Block b;
    std::memcpy(&b, raw, sizeof b);
    return sum(b, q8);
}
int64_t sum_iq2_xxs(const uint8_t* raw, const int8_t* q8) {
    return block_sum_of<quant::block_iq2_xxs>(raw, q8, [](const auto& b, const int8_t* q) {
        return quant::iq2xxs_block_sum(b, quant::kIq2xxsGrid, quant::kIq2Signs, q);
    });
}
int64_t sum_iq2_xs(const uint8_t* raw, const int8_t* q8) {
    return block_sum_of<quant::block_iq2_xs>(raw, q8, [](const auto& b, const int8_t* q) {
        return quant::iq2xs_block_sum(b, quant::kIq2xsGrid, quant::kIq2Signs, q);
    });
}
int64_t sum_iq2_s(const uint8_t* raw, const int8_t* q8) {
    return block_sum_of<quant::block_iq2_s>(raw, q8, [](const auto& b, const int8_t* q) {
        return quant::iq2s_block_sum(b, quant::kIq2sGrid, q);
    });
}
int64_t sum_iq3_xxs(const uint8_t* raw, const int8_t* q8) {
    return block_sum_of<quant::block_iq3_xxs>(raw, q8, [](const auto& b, const int8_t* q) {
        return quant::iq3xxs_block_sum(b, quant::kIq3xxsGrid, quant::kIq2Signs, q);
    });
}
int64_t sum_iq3_s(const uint8_t* raw, const int8_t* q8) {
    return block_sum_of<quant::block_iq3_s>(raw, q8, [](const auto& b, const int8_t* q) {
        return quant::iq3s_block_sum(b, quant::kIq3sGrid, q);
    });
}

// One format as the tests see it: raw block bytes, the row functions, the header's block sum, and
// `unit`, what one decoded weight of a d = 1 block is worth in the dot's integers (the dot is
// sum / unit).
struct Format {
    const char* name;
    size_t block_bytes;
    DecodeFn decode;
    DotFn dot, dot_avx2;
    int64_t (*block_sum)(const uint8_t* raw, const int8_t* q8);
    int unit;
};

const Format kFormats[] = {
    {"iq2_xxs", sizeof(quant::block_iq2_xxs), quant::decode_row_iq2_xxs, quant::vec_dot_iq2_xxs_q8_K,
     quant::vec_dot_iq2_xxs_q8_K_avx2, sum_iq2_xxs, 8},
    {"iq2_xs", sizeof(quant::block_iq2_xs), quant::decode_row_iq2_xs, quant::vec_dot_iq2_xs_q8_K,
     quant::vec_dot_iq2_xs_q8_K_avx2, sum_iq2_xs, 8},
    {"iq2_s", sizeof(quant::block_iq2_s), quant::decode_row_iq2_s, quant::vec_dot_iq2_s_q8_K,
     quant::vec_dot_iq2_s_q8_K_avx2, sum_iq2_s, 8},
    {"iq3_xxs", sizeof(quant::block_iq3_xxs), quant::decode_row_iq3_xxs, quant::vec_dot_iq3_xxs_q8_K,
     quant::vec_dot_iq3_xxs_q8_K_avx2, sum_iq3_xxs, 4},
    {"iq3_s", sizeof(quant::block_iq3_s), quant::decode_row_iq3_s, quant::vec_dot_iq3_s_q8_K,
     quant::vec_dot_iq3_s_q8_K_avx2, sum_iq3_s, 1},
};

constexpr uint16_t kHalfOne = 0x3c00;  // binary16 1.0
constexpr uint16_t kHalfHalf = 0x3800;  // binary16 0.5

int grid_byte(uint64_t entry, int j) { return int((entry >> (8 * j)) & 0xff); }

// Random blocks of any format: every index, sign and scale bit reachable, d = +-10^U(-3,0) as f16.
std::vector<uint8_t> random_blocks(std::mt19937_64& rng, const Format& f, int64_t blocks, bool unit_scale) {
    std::vector<uint8_t> raw(f.block_bytes * size_t(blocks));
    for (auto& c : raw) c = uint8_t(rng());
    for (int64_t b = 0; b < blocks; ++b) {
        const float d = test::random_scale(rng);
        const uint16_t h = unit_scale ? kHalfOne : quant::f32_to_f16(d);
        std::memcpy(raw.data() + f.block_bytes * size_t(b), &h, 2);  // d is every block's first field
    }
    return raw;
}

// Q8_K activations (any int8, consistent bsums); -128 replaced by -127 where asked: the AVX2
// kernels' documented domain, which is everything quantize_row_q8_k produces.
std::vector<quant::block_q8_K> random_activations(std::mt19937_64& rng, int64_t blocks, bool unit_scale, bool allow_minus_128) {
    std::vector<quant::block_q8_K> y(static_cast<size_t>(blocks));
    for (auto& b : y) {
        b = test::random_q8k_block(rng);
        if (!allow_minus_128)
            for (auto& q : b.qs)
                if (q == -128) q = -127;
        if (unit_scale) b.d = 1.0f;
    }
    return y;
}

// The test's own integer: sum over the block of (unit * decoded weight of the d = 1 block) * q8.
int64_t derived_sum(const Format& f, const uint8_t* block, const int8_t* q8) {
    std::vector<float> w(256);
    f.decode(block, w.data(), 256);
    int64_t sum = 0;
    for (int j = 0; j < 256; ++j) {
        const double scaled = double(w[size_t(j)]) * f.unit;
        REQUIRE(scaled == std::nearbyint(scaled));  // a d = 1 block decodes to multiples of 1/unit
        sum += int64_t(scaled) * q8[j];
    }
    return sum;
}

}  // namespace

TEST_CASE("IQ2_XXS: one block worked by hand") {
    // d = 0.5. Sub-block 0: group 0 has grid index 1 (ggml's iq2xxs_grid[1]: 43 then seven 8s) and
    // sign index 1 (ksigns 0x81: weights 0 and 7 negative), groups 1-3 index 0 (eight 8s), ls = 3:
    // db = 0.5 * 3.5 * 0.25 = 0.4375, so 43 -> 18.8125 and 8 -> 3.5. Sub-blocks 1-7 are all zero
    // words: ls = 0, db = 0.0625, every weight 0.0625 * 8 = 0.5.
    quant::block_iq2_xxs b{};
    b.d = kHalfHalf;
    b.qs[0] = 1;                   // index bytes of groups 0, 1
    b.qs[2] = 1;                   // sign index of group 0 (bits 0-6 of the second word)
    b.qs[3] = uint16_t(3u << 12);  // ls = bits 28-31 of the second word
    check_equal(decode(quant::decode_row_iq2_xxs, b),
                expect(256, 0.5f, {{0, -18.8125f}, {1, 3.5f}, {2, 3.5f}, {3, 3.5f}, {4, 3.5f}, {5, 3.5f}, {6, 3.5f},
                                   {7, -3.5f}, {8, 3.5f}, {9, 3.5f}, {10, 3.5f}, {11, 3.5f}, {12, 3.5f}, {13, 3.5f},
                                   {14, 3.5f}, {15, 3.5f}, {16, 3.5f}, {17, 3.5f}, {18, 3.5f}, {19, 3.5f}, {20, 3.5f},
                                   {21, 3.5f}, {22, 3.5f}, {23, 3.5f}, {24, 3.5f}, {25, 3.5f}, {26, 3.5f}, {27, 3.5f},
                                   {28, 3.5f}, {29, 3.5f}, {30, 3.5f}, {31, 3.5f}}));
}

TEST_CASE("IQ2_XS: one block worked by hand") {
    // d = 0.5. Word 0: grid index 1, sign index 1 (0x81). scales[0] = 0x53: groups 0-1 ls = 3
    // (db 0.4375: 8 -> 3.5, 43 -> 18.8125), groups 2-3 ls = 5 (db 0.6875: 8 -> 5.5). The rest is
    // index 0 with ls = 0: 0.5.
    quant::block_iq2_xs b{};
    b.d = kHalfHalf;
    b.qs[0] = uint16_t(1 | 1 << 9);
    b.scales[0] = 0x53;
    std::vector<float> want = expect(256, 0.5f, {{0, -18.8125f}, {7, -3.5f}});
    for (size_t j = 1; j < 16; ++j)
        if (j != 7) want[j] = 3.5f;
    for (size_t j = 16; j < 32; ++j) want[j] = 5.5f;
    check_equal(decode(quant::decode_row_iq2_xs, b), want);
}

TEST_CASE("IQ2_S: one block worked by hand, the two high index bits included") {
    // d = 0.5, scales[0] = 0x53 as for IQ2_XS. Group 0: index 1, sign byte 0x03 (weights 0, 1
    // negative; IQ2_S stores all eight sign bits). Group 1: low byte 0, qh[0] bits 2-3 = 1, so index
    // 256, whose bytes are read from the generated grid. Groups 2-3: 5.5; the rest 0.5.
    quant::block_iq2_s b{};
    b.d = kHalfHalf;
    b.qs[0] = 1;
    b.qs[32] = 0x03;
    b.qh[0] = 1 << 2;
    b.scales[0] = 0x53;
    std::vector<float> want = expect(256, 0.5f, {{0, -18.8125f}, {1, -3.5f}});
    for (size_t j = 2; j < 8; ++j) want[j] = 3.5f;
    for (int j = 0; j < 8; ++j) want[size_t(8 + j)] = 0.4375f * float(grid_byte(quant::kIq2sGrid[256], j));
    for (size_t j = 16; j < 32; ++j) want[j] = 5.5f;
    check_equal(decode(quant::decode_row_iq2_s, b), want);
}

TEST_CASE("IQ3_XXS: one block worked by hand") {
    // d = 0.5. Sub-block 0: group 0's entries are index 1 (ggml's iq3xxs_grid[1]: 20, 4, 4, 4) and
    // index 0 (four 4s), sign index 1 (0x81), ls = 3: db = 0.5 * 3.5 * 0.5 = 0.875, so 20 -> 17.5
    // and 4 -> 3.5. Sub-blocks 1-7: ls = 0, db = 0.125, 4 -> 0.5.
    quant::block_iq3_xxs b{};
    b.d = kHalfHalf;
    b.qs[0] = 1;
    const uint32_t w = 1u | 3u << 28;
    std::memcpy(b.qs + 64, &w, 4);
    std::vector<float> want = expect(256, 0.5f, {{0, -17.5f}, {7, -3.5f}});
    for (size_t j = 1; j < 32; ++j)
        if (j != 7) want[j] = 3.5f;
    check_equal(decode(quant::decode_row_iq3_xxs, b), want);
}

TEST_CASE("IQ3_S: one block worked by hand, the high index bit included") {
    // d = 0.5. Sub-block 0 has ls = 3 (db = 0.5 * 7 = 3.5), sub-block 1 ls = 5 (db 5.5), the others
    // ls = 0 (db 0.5) with index 0 (four 1s). Sub-block 0: weights 0-3 index 1 (iq3s_grid[1]: 3, 1,
    // 1, 1) with signs 0x03 (weights 0, 1 negative); weights 4-7: low byte 0 and bit 1 of qh[0], so
    // index 256, read from the generated grid.
    quant::block_iq3_s b{};
    b.d = kHalfHalf;
    b.qs[0] = 1;
    b.qh[0] = 1 << 1;
    b.signs[0] = 0x03;
    b.scales[0] = 0x53;
    std::vector<float> want = expect(256, 0.5f, {{0, -10.5f}, {1, -3.5f}, {2, 3.5f}, {3, 3.5f}});
    for (int j = 0; j < 4; ++j) want[size_t(4 + j)] = 3.5f * float(grid_byte(quant::kIq3sGrid[256], j));
    for (size_t j = 8; j < 32; ++j) want[j] = 3.5f;
    for (size_t j = 32; j < 64; ++j) want[j] = 5.5f;
    check_equal(decode(quant::decode_row_iq3_s, b), want);
}

TEST_CASE("a negative scale flips every weight and a zero scale gives signed zeros, as ggml") {
    std::mt19937_64 rng(test::test_seed());
    for (const Format& f : kFormats) {
        CAPTURE(f.name);
        auto raw = random_blocks(rng, f, 1, true);
        std::vector<float> pos(256), neg(256), zero(256);
        f.decode(raw.data(), pos.data(), 256);
        const uint16_t minus_one = 0xbc00, minus_zero = 0x8000;
        std::memcpy(raw.data(), &minus_one, 2);
        f.decode(raw.data(), neg.data(), 256);
        std::memcpy(raw.data(), &minus_zero, 2);
        f.decode(raw.data(), zero.data(), 256);
        for (size_t j = 0; j < 256; ++j) {
            CAPTURE(j);
            CHECK(neg[j] == -pos[j]);
            CHECK(zero[j] == 0.0f);
            CHECK(std::signbit(zero[j]) == !std::signbit(pos[j]));  // -0 * positive = -0
        }
    }
}

TEST_CASE("per-superblock integers of the header and the scalar dots equal those derived from decoded weights") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (const Format& f : kFormats) {
        CAPTURE(f.name);
        for (int t = 0; t < 300; ++t) {
            CAPTURE(t);
            auto raw = random_blocks(rng, f, 1, true);
            auto y = random_activations(rng, 1, true, true);  // any int8, -128 included
            if (t == 0) std::memset(y[0].qs, 0x80, sizeof y[0].qs);  // every q8 = -128
            if (t == 1) {  // the largest sum: every magnitude byte of the block set, q8 = 127
                std::memset(raw.data() + 2, 0xff, f.block_bytes - 2);
                std::memset(y[0].qs, 127, sizeof y[0].qs);
            }
            const int64_t want = derived_sum(f, raw.data(), y[0].qs);
            CHECK(f.block_sum(raw.data(), y[0].qs) == want);
            // d = d_q8 = 1: the dot is float(sum) / unit (exact whenever |sum| < 2^24).
            const float dot = f.dot(256, raw.data(), y.data());
            CHECK(quant::f32_to_bits(dot) == quant::f32_to_bits(float(want) * (1.0f / float(f.unit))));
        }
    }
}

TEST_CASE("multi-block dots agree with a float64 product of decoded weights and activations") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (const Format& f : kFormats) {
        CAPTURE(f.name);
        for (int64_t blocks : {1, 3, 17}) {
            CAPTURE(blocks);
            const int64_t n = 256 * blocks;
            const auto raw = random_blocks(rng, f, blocks, false);
            const auto y = random_activations(rng, blocks, false, true);
            std::vector<float> w(static_cast<size_t>(n)), x(static_cast<size_t>(n));
            f.decode(raw.data(), w.data(), n);
            quant::dequantize_row_q8_k(y.data(), x.data(), n);
            double exact = 0, terms = 0;
            for (size_t j = 0; j < size_t(n); ++j) {
                exact += double(w[j]) * double(x[j]);
                terms += std::fabs(double(w[j]) * double(x[j]));
            }
            // Error budget, in units of u = 2^-24 times terms = sum |w x|: x = d_q8 * q8 rounded to
            // float (1 u); per block d_w * d_q8 rounded (1 u), float(sum) (exact below 2^24, else
            // 1 u), the product (1 u) and the running sum (at most `blocks` u). The float64 sums
            // add nothing visible.
            const double bound = double(blocks + 4) * 0x1p-24 * terms;
            const float got = f.dot(n, raw.data(), y.data());
            CHECK(std::fabs(double(got) - exact) <= bound);
        }
    }
}

TEST_CASE("AVX2 dots compute the scalar dots' integers, so their results are bit-identical") {
    if (!test::avx2_kernels_or_skip()) return;
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (const Format& f : kFormats) {
        CAPTURE(f.name);
        // Single blocks with unit scales: exactly the derived integer.
        for (int t = 0; t < 300; ++t) {
            CAPTURE(t);
            auto raw = random_blocks(rng, f, 1, true);
            auto y = random_activations(rng, 1, true, false);
            if (t == 0) {  // the extremes of the AVX2 domain: all magnitude bits set, q8 = -127
                std::memset(raw.data() + 2, 0xff, f.block_bytes - 2);
                std::memset(y[0].qs, -127, sizeof y[0].qs);
            }
            const float want = float(derived_sum(f, raw.data(), y[0].qs)) * (1.0f / float(f.unit));
            CHECK(quant::f32_to_bits(f.dot_avx2(256, raw.data(), y.data())) == quant::f32_to_bits(want));
        }
        // Long rows with random scales: the kernels share the float steps too, so results are
        // bit-identical (a stronger property than agreeing to float rounding).
        for (int64_t blocks : {1, 3, 17, 64}) {
            CAPTURE(blocks);
            const auto raw = random_blocks(rng, f, blocks, false);
            const auto y = random_activations(rng, blocks, false, false);
            const float scalar = f.dot(256 * blocks, raw.data(), y.data());
            const float avx2 = f.dot_avx2(256 * blocks, raw.data(), y.data());
            CHECK(quant::f32_to_bits(avx2) == quant::f32_to_bits(scalar));
        }
    }
}
