// TQ1_0 and TQ2_0 (lib/quant/ternary): a block of each decoded by hand, and their Q8_K dots
// against integer sums and float64 products of the decoded rows.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/half.hpp"
#include "quant/codecs/ternary.hpp"
#include "quant_legacy_test_util.hpp"
#include "test_support.hpp"

using namespace strata;
using test::legacy::DotSpec;

namespace {

using test::check_bits_equal;

// The scale sits at the end of both blocks.
void unit_tq1(uint8_t* b) { test::legacy::put_f16(b + 52, 1.0f); }
void random_tq1(uint8_t* b, std::mt19937_64& rng) { test::legacy::put_f16(b + 52, test::legacy::random_scale(rng)); }
void unit_tq2(uint8_t* b) { test::legacy::put_f16(b + 64, 1.0f); }
void random_tq2(uint8_t* b, std::mt19937_64& rng) { test::legacy::put_f16(b + 64, test::legacy::random_scale(rng)); }

const DotSpec kSpecs[] = {
    {"tq1_0", 256, 54, test::legacy::Act::q8_K, quant::decode_row_tq1_0, quant::vec_dot_tq1_0_q8_K, nullptr, false,
     unit_tq1, random_tq1, false},
    {"tq2_0", 256, 66, test::legacy::Act::q8_K, quant::decode_row_tq2_0, quant::vec_dot_tq2_0_q8_K, nullptr, false,
     unit_tq2, random_tq2, false},
};

}  // namespace

TEST_CASE("TQ1_0: one block worked by hand") {
    // ggml's quantizer writes trits t0..t4 (0..2) as v = 81 t0 + 27 t1 + 9 t2 + 3 t3 + t4 and the
    // byte ceil(v * 256 / 243); trit l decodes as (uint8_t(b * 3^l) * 3) >> 8, weight d * (t - 1).
    //   all trits 1: v = 121 -> byte 128 (qs) and, with four trits (81, 27, 9, 3): v = 120 -> 127 (qh)
    //   trits (2, 0, 1, 2, 1): v = 178 -> byte 188;  qh trits (0, 2, 1, 1): v = 66 -> byte 70
    quant::block_tq1_0 b;
    std::memset(b.qs, 128, sizeof b.qs);
    std::memset(b.qh, 127, sizeof b.qh);
    b.d = 0x3800;  // 0.5
    b.qs[0] = 188;   // weights 0, 32, 64, 96, 128 = 0.5 * (1, -1, 0, 1, 0)
    b.qs[40] = 188;  // second region, m = 8: weights 160 + 16l + 8 = 168, 184, 200, 216, 232
    b.qh[1] = 70;    // weights 240 + 4l + 1 = 241, 245 (, 249, 253: zero)
    std::vector<float> want(256, 0.0f);
    want[0] = 0.5f, want[32] = -0.5f, want[96] = 0.5f;
    want[168] = 0.5f, want[184] = -0.5f, want[216] = 0.5f;
    want[241] = -0.5f, want[245] = 0.5f;
    std::vector<float> y(256, std::nanf(""));
    quant::decode_row_tq1_0(&b, y.data(), 256);
    check_bits_equal(y, want);
    const int trits[5] = {2, 0, 1, 2, 1};
    for (int l = 0; l < 5; ++l) CHECK(quant::tq1_trit(188, l) == trits[l]);
}

TEST_CASE("TQ2_0: one block worked by hand") {
    // Bits 2l..2l+1 of qs[32h + m] = code of weight 128h + 32l + m; weight d * (code - 1).
    quant::block_tq2_0 b;
    std::memset(b.qs, 0x55, sizeof b.qs);  // code 1 everywhere: 0
    b.d = 0xC000;                          // -2
    b.qs[0] = 0xE4;   // codes 0, 1, 2, 3: w0 = 2, w32 = 0, w64 = -2, w96 = -4
    b.qs[33] = 0x56;  // code 2 at l = 0: w129 = -2
    std::vector<float> want(256, -0.0f);  // -2 * 0 = -0.0
    want[0] = 2.0f, want[32] = -0.0f, want[64] = -2.0f, want[96] = -4.0f, want[129] = -2.0f;
    std::vector<float> y(256, std::nanf(""));
    quant::decode_row_tq2_0(&b, y.data(), 256);
    check_bits_equal(y, want);
}

TEST_CASE("ternary dots: single blocks with unit scales give exactly the integer sum of decoded weights") {
    test::legacy::check_block_integer_sums(kSpecs, 300);
}

TEST_CASE("ternary dots on rows of 1, 3, 17 and 128 blocks match a float64 product within float32 error") {
    test::legacy::check_rows(kSpecs);
}
