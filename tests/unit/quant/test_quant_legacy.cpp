// The legacy formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_1), MXFP4 and Q1_0 (lib/quant/legacy_quants,
// mxfp4, q1_0): one block of each decoded by hand, ggml's reference quantizers on worked blocks
// and round trips, and every dot kernel (scalar, and AVX2 where there is one) against integer
// sums and float64 products of the decoded rows. (Bit-exactness of the decoders and quantizers
// against the gguf package's numpy code on random blocks: the lead's interop pytest.)
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/half.hpp"
#include "quant/codecs/legacy_quants.hpp"
#include "quant/codecs/mxfp4.hpp"
#include "quant/codecs/q1_0.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant_legacy_test_util.hpp"
#include "quant_test_util.hpp"
#include "test_support.hpp"

using namespace strata;
using test::legacy::DotSpec;

namespace {

using test::decode;
using test::expect;
using test::check_bits_equal;

void decode_q8_0(const void* b, float* y, int64_t n) { quant::dequantize_row_q8_0(static_cast<const quant::block_q8_0*>(b), y, n); }

void unit_d(uint8_t* b) { test::legacy::put_f16(b, 1.0f); }
void random_d(uint8_t* b, std::mt19937_64& rng) { test::legacy::put_f16(b, test::legacy::random_scale(rng)); }
void unit_d_m(uint8_t* b) {
    test::legacy::put_f16(b, 1.0f);
    test::legacy::put_f16(b + 2, 0.0f);
}
void random_d_m(uint8_t* b, std::mt19937_64& rng) {
    const float d = test::legacy::random_scale(rng);
    test::legacy::put_f16(b, d);
    test::legacy::put_f16(b + 2, -8.0f * std::fabs(d) * test::legacy::random_scale(rng));
}
void unit_e(uint8_t* b) { b[0] = 128; }  // half scale 2^0: weights are the doubled E2M1 integers
void random_e(uint8_t* b, std::mt19937_64& rng) { b[0] = uint8_t(118 + rng() % 19); }

const DotSpec kSpecs[] = {
    {"q4_0", 32, 18, test::legacy::Act::q8_0, quant::decode_row_q4_0, quant::vec_dot_q4_0_q8_0,
     quant::vec_dot_q4_0_q8_0_avx2, false, unit_d, random_d, false},
    {"q4_1", 32, 20, test::legacy::Act::q8_1, quant::decode_row_q4_1, quant::vec_dot_q4_1_q8_1,
     quant::vec_dot_q4_1_q8_1_avx2, false, unit_d_m, random_d_m, true},
    {"q5_0", 32, 22, test::legacy::Act::q8_0, quant::decode_row_q5_0, quant::vec_dot_q5_0_q8_0,
     quant::vec_dot_q5_0_q8_0_avx2, false, unit_d, random_d, false},
    {"q5_1", 32, 24, test::legacy::Act::q8_1, quant::decode_row_q5_1, quant::vec_dot_q5_1_q8_1,
     quant::vec_dot_q5_1_q8_1_avx2, false, unit_d_m, random_d_m, true},
    {"q8_0", 32, 34, test::legacy::Act::q8_0, decode_q8_0, quant::vec_dot_q8_0_q8_0, quant::vec_dot_q8_0_q8_0_avx2, true,
     unit_d, random_d, false},
    {"mxfp4", 32, 17, test::legacy::Act::q8_0, quant::decode_row_mxfp4, quant::vec_dot_mxfp4_q8_0,
     quant::vec_dot_mxfp4_q8_0_avx2, false, unit_e, random_e, false},
    {"q1_0", 128, 18, test::legacy::Act::q8_0, quant::decode_row_q1_0, quant::vec_dot_q1_0_q8_0, nullptr, false, unit_d,
     random_d, false},
};

}  // namespace

TEST_CASE("legacy blocks have ggml's sizes") {
    CHECK(sizeof(quant::block_q4_0) == 18);
    CHECK(sizeof(quant::block_q4_1) == 20);
    CHECK(sizeof(quant::block_q5_0) == 22);
    CHECK(sizeof(quant::block_q5_1) == 24);
    CHECK(sizeof(quant::block_q8_1) == 36);
    CHECK(sizeof(quant::block_mxfp4) == 17);
    CHECK(sizeof(quant::block_q1_0) == 18);
}

TEST_CASE("Q4_0: one block worked by hand") {
    // d = 0.5; weight = 0.5 * (q - 8); byte j: low nibble weight j, high nibble weight j + 16.
    quant::block_q4_0 b;
    b.d = 0x3800;
    std::memset(b.qs, 0x88, sizeof b.qs);  // q = 8 everywhere: 0
    b.qs[0] = 0xF0;                        // w0 = 0.5 * -8 = -4,   w16 = 0.5 * 7 = 3.5
    b.qs[1] = 0x19;                        // w1 = 0.5 * 1 = 0.5,   w17 = 0.5 * -7 = -3.5
    check_bits_equal(decode(quant::decode_row_q4_0, b, 32), expect(32, 0.0f, {{0, -4.0f}, {16, 3.5f}, {1, 0.5f}, {17, -3.5f}}));
}

TEST_CASE("Q4_1: one block worked by hand") {
    // d = 0.5, m = -1; weight = 0.5 * q - 1.
    quant::block_q4_1 b;
    b.d = 0x3800;
    b.m = 0xBC00;
    std::memset(b.qs, 0x00, sizeof b.qs);  // q = 0: -1
    b.qs[0] = 0xF3;                        // w0 = 1.5 - 1 = 0.5, w16 = 7.5 - 1 = 6.5
    b.qs[15] = 0x20;                       // w15 = -1,           w31 = 1 - 1 = 0
    check_bits_equal(decode(quant::decode_row_q4_1, b, 32), expect(32, -1.0f, {{0, 0.5f}, {16, 6.5f}, {31, 0.0f}}));
}

TEST_CASE("Q5_0: one block worked by hand") {
    // d = 1; weight = q - 16 with q's bit 4 = bit j of qh (little-endian uint32).
    quant::block_q5_0 b;
    b.d = 0x3C00;
    std::memset(b.qs, 0x00, sizeof b.qs);
    std::memset(b.qh, 0xFF, sizeof b.qh);  // q = 16 everywhere: 0
    b.qs[0] = 0x0F;                        // w0 = 31 - 16 = 15
    b.qh[2] = 0xFE;                        // bit 16 clear: w16 = 0 - 16 = -16
    b.qh[0] = 0xF7;                        // bit 3 clear, and
    b.qs[3] = 0x35;                        // w3 = 5 - 16 = -11, w19 = (3 | 16) - 16 = 3
    check_bits_equal(decode(quant::decode_row_q5_0, b, 32), expect(32, 0.0f, {{0, 15.0f}, {16, -16.0f}, {3, -11.0f}, {19, 3.0f}}));
}

TEST_CASE("Q5_1: one block worked by hand") {
    // d = 0.5, m = 2; weight = 0.5 * q + 2.
    quant::block_q5_1 b;
    b.d = 0x3800;
    b.m = 0x4000;
    std::memset(b.qs, 0x00, sizeof b.qs);
    std::memset(b.qh, 0x00, sizeof b.qh);  // q = 0: 2
    b.qh[3] = 0x80;                        // bit 31: fifth bit of w31
    b.qs[15] = 0xA0;                       // w31 = 0.5 * (10 | 16) + 2 = 15, w15 = 2
    b.qs[4] = 0x0B;                        // w4 = 0.5 * 11 + 2 = 7.5
    check_bits_equal(decode(quant::decode_row_q5_1, b, 32), expect(32, 2.0f, {{31, 15.0f}, {4, 7.5f}}));
}

TEST_CASE("Q8_1: one block decodes as d * qs, ignoring s") {
    quant::block_q8_1 b{};
    b.d = 0x3800;  // 0.5
    b.s = 0x7BFF;  // any value: s only serves the min term of a dot
    b.qs[0] = -128;
    b.qs[31] = 127;
    b.qs[5] = -3;
    check_bits_equal(decode(quant::decode_row_q8_1, b, 32), expect(32, 0.0f, {{0, -64.0f}, {31, 63.5f}, {5, -1.5f}}));
}

TEST_CASE("MXFP4: the generated codebook and two blocks worked by hand") {
    // The E2M1 values doubled: 0, 0.5, 1, 1.5, 2, 3, 4, 6 -> 0..12; codes 8..15 the negatives.
    const int8_t want[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    for (int i = 0; i < 16; ++i) CHECK(quant::kMxfp4Values[i] == want[i]);
    // e = 127: half scale 2^-1, so a weight is the true E2M1 value of its code.
    quant::block_mxfp4 b[2];
    b[0].e = 127;
    std::memset(b[0].qs, 0x00, sizeof b[0].qs);
    b[0].qs[0] = 0xF7;  // w0 = code 7 = 6,     w16 = code 15 = -6
    b[0].qs[1] = 0x9A;  // w1 = code 10 = -1,   w17 = code 9 = -0.5
    // e = 0: half scale 2^-128, a subnormal (ggml's e8m0 half has no zero), e.g. code 1 = 2^-128.
    b[1].e = 0;
    std::memset(b[1].qs, 0x00, sizeof b[1].qs);
    b[1].qs[2] = 0xE1;  // w2 = 2^-128, w18 = code 14 = -8 * 2^-128 = -2^-125
    std::vector<float> y(64, std::nanf(""));
    quant::decode_row_mxfp4(b, y.data(), 64);
    auto want_y = expect(64, 0.0f, {{0, 6.0f}, {16, -6.0f}, {1, -1.0f}, {17, -0.5f}, {34, std::ldexp(1.0f, -128)}, {50, -std::ldexp(1.0f, -125)}});
    check_bits_equal(y, want_y);
    CHECK(quant::mxfp4_half_scale(255) == std::ldexp(1.0f, 127));
    CHECK(quant::mxfp4_half_scale(1) == std::ldexp(1.0f, -127));
}

TEST_CASE("Q1_0: blocks worked by hand from ggml's dequantize_row_q1_0 (the gguf package has no Q1_0 decoder)") {
    // ggml: bit j % 8 of qs[j / 8] set -> +d, clear -> -d (so a zero scale gives +0.0 and -0.0).
    quant::block_q1_0 b[2];
    b[0].d = 0x3400;  // 0.25
    std::memset(b[0].qs, 0x00, sizeof b[0].qs);
    b[0].qs[0] = 0x01;   // w0 = +0.25, w1..w7 = -0.25
    b[0].qs[15] = 0x80;  // w127 = +0.25
    b[0].qs[6] = 0x24;   // bits 2 and 5: w50 = w53 = +0.25
    b[1].d = 0x0000;
    std::memset(b[1].qs, 0xFF, sizeof b[1].qs);
    b[1].qs[3] = 0xFE;  // w24 of block 1 (index 152) is -0.0, every other +0.0
    std::vector<float> y(256, std::nanf(""));
    quant::decode_row_q1_0(b, y.data(), 256);
    auto want = expect(256, 0.0f, {{0, 0.25f}, {127, 0.25f}, {50, 0.25f}, {53, 0.25f}, {152, -0.0f}});
    for (size_t j = 1; j < 127; ++j)
        if (j != 50 && j != 53) want[j] = -0.25f;
    check_bits_equal(y, want);
}

TEST_CASE("Q1_0 x Q8_0 adds or subtracts each activation by its sign bit, four Q8_0 blocks per Q1_0 block") {
    // Worked by hand from ggml_vec_dot_q1_0_q8_0_generic: d_w = 2, activation blocks with d = 1, 0.5,
    // 0.25, 0.125 and all qs = 1 except qs[0] = 10 in each; sign bits all set except weight 0.
    // Integer sums 31 - 10 = 21 (block 0, weight 0 negative) and 31 + 10 = 41 (blocks 1..3):
    // 2 * (21 * 1 + 41 * 0.5 + 41 * 0.25 + 41 * 0.125) = 2 * 56.875 = 113.75.
    quant::block_q1_0 w;
    w.d = 0x4000;
    std::memset(w.qs, 0xFF, sizeof w.qs);
    w.qs[0] = 0xFE;
    quant::block_q8_0 x[4];
    const uint16_t d[4] = {0x3C00, 0x3800, 0x3400, 0x3000};
    for (int k = 0; k < 4; ++k) {
        x[k].d = d[k];
        for (auto& q : x[k].qs) q = 1;
        x[k].qs[0] = 10;
    }
    CHECK(quant::vec_dot_q1_0_q8_0(128, &w, x) == 113.75f);
}

TEST_CASE("Q4_0 and Q4_1 quantizers on a worked block") {
    // x_j = j - 16: the first element of largest |x| is x0 = -16, so Q4_0's d = -16 / -8 = 2 and
    // q_j = trunc((j - 16) / 2 + 8.5) = floor((j + 1) / 2), clamped to 15 (j = 31 gives 16).
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[size_t(j)] = float(j - 16);
    quant::block_q4_0 b0;
    quant::quantize_row_q4_0(x.data(), &b0, 32, nullptr);
    CHECK(b0.d == 0x4000);
    for (int j = 0; j < 16; ++j) {
        CAPTURE(j);
        CHECK(b0.qs[j] == uint8_t((j + 1) / 2 | std::min(15, (j + 17) / 2) << 4));
    }
    // Q4_1: min = -16, d = 31 / 15; q_j = trunc(j * (15 / 31) + 0.5) (as floats).
    quant::block_q4_1 b1;
    quant::quantize_row_q4_1(x.data(), &b1, 32, nullptr);
    CHECK(b1.d == quant::f32_to_f16(31.0f / 15.0f));
    CHECK(b1.m == quant::f32_to_f16(-16.0f));
    CHECK(b1.qs[0] == 0x80);   // q0 = 0, q16 = trunc(16 * 15/31 + 0.5) = trunc(8.24) = 8
    CHECK(b1.qs[15] == 0xF7);  // q15 = trunc(7.76) = 7, q31 = 15
    // All-zero input: d = -0.0 (0 / -8, as ggml), every code 8: decodes to -0.0 * 0.
    std::vector<float> zeros(32, 0.0f);
    quant::quantize_row_q4_0(zeros.data(), &b0, 32, nullptr);
    CHECK(b0.d == 0x8000);
    for (int j = 0; j < 16; ++j) CHECK(b0.qs[j] == 0x88);
}

TEST_CASE("the legacy quantizers round-trip random rows to within their step") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    using Quantize = void (*)(const float*, void*, int64_t, const float*);
    struct Case {
        const char* name;
        Quantize quantize;
        void (*decode)(const void*, float*, int64_t);
        size_t block_bytes;
        double steps;  // the error bound in units of |d|: the symmetric types clamp the largest
                       // code of the sign opposite to the scale's element (a full step); the
                       // min types round to nearest (half a step)
        bool has_min;
    };
    const Case cases[] = {{"q4_0", quant::quantize_row_q4_0, quant::decode_row_q4_0, 18, 1.0, false},
                          {"q4_1", quant::quantize_row_q4_1, quant::decode_row_q4_1, 20, 0.5, true},
                          {"q5_0", quant::quantize_row_q5_0, quant::decode_row_q5_0, 22, 1.0, false},
                          {"q5_1", quant::quantize_row_q5_1, quant::decode_row_q5_1, 24, 0.5, true}};
    for (const auto& c : cases) {
        CAPTURE(c.name);
        for (int64_t nb : {1, 3, 17}) {
            const int64_t n = nb * 32;
            auto x = test::random_normal(rng, n);
            for (auto& v : x) v *= std::pow(10.0f, float(int(rng() % 7)) - 3.0f);
            std::vector<uint8_t> blocks(size_t(nb) * c.block_bytes);
            c.quantize(x.data(), blocks.data(), n, nullptr);
            std::vector<float> y(static_cast<size_t>(n));
            c.decode(blocks.data(), y.data(), n);
            for (int64_t b = 0; b < nb; ++b) {
                const uint8_t* blk = blocks.data() + size_t(b) * c.block_bytes;
                const double d = std::fabs(test::legacy::get_f16(blk));
                const double m = c.has_min ? std::fabs(test::legacy::get_f16(blk + 2)) : 0.0;
                // Plus the binary16 rounding of d (times at most 31 codes) and of m, and float slack.
                const double bound = d * (c.steps + 32 * std::ldexp(1.0, -11)) + m * std::ldexp(1.0, -10) + 1e-30;
                for (int j = 0; j < 32; ++j) {
                    const size_t i = size_t(b * 32 + j);
                    CAPTURE(i);
                    CHECK(std::fabs(double(x[i]) - double(y[i])) <= bound);
                }
            }
        }
    }
}

TEST_CASE("quantize_row_q8_1 writes ggml's d, rounded codes and s = binary16(d * sum)") {
    // Worked: x_j = j - 16 (max |x| = 16): d = 16/127, q_j = roundf((j - 16) * 127/16) (half away from 0).
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[size_t(j)] = float(j - 16);
    quant::block_q8_1 b;
    quant::quantize_row_q8_1(x.data(), &b, 32);
    const float d = 16.0f / 127.0f;
    CHECK(b.d == quant::f32_to_f16(d));
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
        CAPTURE(j);
        CHECK(b.qs[j] == int8_t(std::roundf(float(j - 16) * (1.0f / d))));
        sum += b.qs[j];
    }
    CHECK(b.qs[0] == -127);
    CHECK(b.s == quant::f32_to_f16(float(sum) * d));
    // Random rows: |q| <= 127, s consistent, and the Q8_0 codes are the same (ggml's two reference
    // quantizers share d and the rounding).
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const auto r = test::random_normal(rng, 17 * 32);
    std::vector<quant::block_q8_1> y1(17);
    std::vector<quant::block_q8_0> y0(17);
    quant::quantize_row_q8_1(r.data(), y1.data(), 17 * 32);
    quant::quantize_row_q8_0(r.data(), y0.data(), 17 * 32);
    for (size_t i = 0; i < 17; ++i) {
        CHECK(y1[i].d == y0[i].d);
        CHECK(std::memcmp(y1[i].qs, y0[i].qs, 32) == 0);
        float amax = 0.0f;
        int s = 0;
        for (int j = 0; j < 32; ++j) {
            CHECK(y1[i].qs[j] >= -127);
            s += y1[i].qs[j];
            amax = std::max(amax, std::fabs(r[i * 32 + size_t(j)]));
        }
        CHECK(y1[i].s == quant::f32_to_f16(float(s) * (amax / 127.0f)));
    }
}

TEST_CASE("legacy, MXFP4 and Q1_0 dots: single blocks with unit scales give exactly the integer sum of decoded weights") {
    test::legacy::check_block_integer_sums(kSpecs, 500);
}

TEST_CASE("legacy, MXFP4 and Q1_0 dots on rows of 1, 3, 17 and 128 blocks match a float64 product within float32 error") {
    test::legacy::check_rows(kSpecs);
}

TEST_CASE("the legacy AVX2 dots compute the scalar kernels' integer sums") {
    if (!test::avx2_kernels_or_skip()) return;
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (const auto& spec : kSpecs) {
        if (!spec.avx2) continue;
        CAPTURE(spec.name);
        // Extremes: every weight code at its largest magnitude against +-127 (and -128 where allowed).
        for (int fill : {0x00, 0xFF, 0x80, 0x7F}) {
            CAPTURE(fill);
            std::vector<uint8_t> w(spec.block_bytes * 3, uint8_t(fill));
            for (size_t b = 0; b < 3; ++b) spec.set_unit(w.data() + b * spec.block_bytes);
            auto x = test::legacy::make_activations(spec.act, 96, rng, true, spec.avx2_needs_no_minus128);
            for (int8_t q : {int8_t(127), int8_t(-127), int8_t(-128)}) {
                if (q == -128 && spec.avx2_needs_no_minus128) continue;
                CAPTURE(int(q));
                const size_t bb = spec.act == test::legacy::Act::q8_1 ? 36 : 34;
                for (size_t b = 0; b < 3; ++b) std::memset(x.bytes.data() + b * bb + bb - 32, q, 32);
                if (spec.act == test::legacy::Act::q8_1)
                    for (size_t b = 0; b < 3; ++b) test::legacy::put_f16(x.bytes.data() + b * bb + 2, 32.0f * q);
                CHECK(spec.avx2(96, w.data(), x.bytes.data()) == spec.scalar(96, w.data(), x.bytes.data()));
            }
        }
    }
}

TEST_CASE("MXFP4 dots scale by the subnormal halves of e = 0 and 1 exactly") {
    // With unit activation scales every term is an integer times 2^-128 or 2^-127 and every partial
    // sum a multiple of 2^-149 below 2^-125: exact in float32, whatever the summation order.
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const DotSpec& spec = kSpecs[5];
    REQUIRE(std::string(spec.name) == "mxfp4");
    for (int t = 0; t < 50; ++t) {
        CAPTURE(t);
        auto w = test::legacy::make_weights(spec, 5, rng, true);
        for (size_t b = 0; b < 5; ++b) w[b * 17] = uint8_t(rng() % 2);
        const auto x = test::legacy::make_activations(spec.act, 160, rng, true, false);
        const auto wd = test::legacy::decoded(spec, w);
        double want = 0;
        for (size_t j = 0; j < 160; ++j) want += double(wd[j]) * x.qs[j];
        CHECK(double(spec.scalar(160, w.data(), x.bytes.data())) == want);
        if (test::have_avx2_kernels()) CHECK(double(spec.avx2(160, w.data(), x.bytes.data())) == want);
    }
}
