// Tensor formats (lib/quant/formats.hpp and the per-format files): Q8_K against ggml's bytes,
// F16/BF16 conversions, Q8_0, and the dispatch entry points.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "quant/convert.hpp"
#include "gguf/ggml_types.hpp"
#include "quant/formats.hpp"
#include "quant/type_traits.hpp"
#include "quant/half.hpp"
#include "quant/iq/iq1s_quantize.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant_test_util.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace strata;

namespace {

// Distance in float64 between f and a candidate representation.
double dist(float f, float candidate) { return std::fabs(double(f) - double(candidate)); }

}  // namespace

TEST_CASE("Q8_K quantization of every fixture activation reproduces ggml's bytes exactly") {
    for (const char* name : test::kIq1sCases) {
        CAPTURE(name);
        const auto x = test::read_npy(test::iq1s_fixture(name, "x")).as<float>();
        const auto expected = test::read_npy(test::iq1s_fixture(name, "x_q8k")).data;
        REQUIRE(x.size() % quant::kQK_K == 0);
        std::vector<uint8_t> got(quant::row_size(quant::kTypeQ8_K, int64_t(x.size())), 0xAB);
        quant::quantize_row(quant::kTypeQ8_K, x.data(), got.data(), int64_t(x.size()), nullptr);
        REQUIRE(got.size() == expected.size());
        // All 292 bytes of every block, bsums included: for the all-zero block (c4) both ggml's
        // fixture (zero-filled buffer) and strata (defined behaviour) hold zero bsums.
        size_t mismatches = 0;
        for (size_t i = 0; i < got.size(); ++i) mismatches += got[i] != expected[i];
        CHECK(mismatches == 0);
    }
}

TEST_CASE("Q8_K of an all-zero block is d = 0, qs = 0 and bsums = 0 whatever the buffer held") {
    std::vector<float> x(256, 0.0f);
    quant::block_q8_K y;
    std::memset(&y, 0x5A, sizeof y);
    quant::quantize_row_q8_k(x.data(), &y, 256);
    CHECK(y.d == 0.0f);
    for (int8_t q : y.qs) CHECK(q == 0);
    for (int16_t s : y.bsums) CHECK(s == 0);
}

TEST_CASE("Q8_K round trip of random activations stays within half a step and bsums add up") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const auto x = test::random_normal(rng, 4096);
    std::vector<quant::block_q8_K> y(16);
    quant::quantize_row_q8_k(x.data(), y.data(), 4096);
    std::vector<float> back(4096);
    quant::dequantize_row(quant::kTypeQ8_K, y.data(), back.data(), 4096);
    for (int b = 0; b < 16; ++b) {
        CAPTURE(b);
        float amax = 0.0f;
        for (int j = 0; j < 256; ++j) amax = std::fmax(amax, std::fabs(x[size_t(256 * b + j)]));
        CHECK(std::fabs(y[size_t(b)].d) == doctest::Approx(amax / 127.0f).epsilon(1e-6));
        for (int j = 0; j < 256; ++j)
            CHECK(std::fabs(back[size_t(256 * b + j)] - x[size_t(256 * b + j)]) <= std::fabs(y[size_t(b)].d) * 0.5001f);
        for (int i = 0; i < 16; ++i) {
            int sum = 0;
            for (int j = 0; j < 16; ++j) sum += y[size_t(b)].qs[16 * i + j];
            CHECK(y[size_t(b)].bsums[i] == sum);
        }
    }
}

TEST_CASE("every binary16 value survives f16 -> f32 -> f16 unchanged, NaNs stay NaN") {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float f = quant::f16_to_f32(uint16_t(h));
        const uint16_t back = quant::f32_to_f16(f);
        const bool is_nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
        if (is_nan) {
            CHECK(std::isnan(f));
            CHECK((back & 0x7c00u) == 0x7c00u);
            CHECK((back & 0x3ffu) != 0);
        } else if (back != h) {
            CAPTURE(h);
            CHECK(back == h);
        }
    }
}

TEST_CASE("f32 -> f16 rounds random values (subnormal, normal, overflow) to the nearest, ties to even") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> exponent(-26.0f, 17.0f);  // subnormal half .. beyond 65504
    std::vector<float> src(20000);
    for (auto& v : src) v = std::exp2(exponent(rng)) * ((rng() & 1) ? -1.0f : 1.0f);
    src.insert(src.end(), {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e-8f, 2.9802322e-8f, 2.9802326e-8f,
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()});
    std::vector<uint16_t> h(src.size());
    quant::f32_to_f16_row(src.data(), h.data(), int64_t(src.size()));
    std::vector<float> back(src.size());
    quant::f16_to_f32_row(h.data(), back.data(), int64_t(h.size()));
    for (size_t i = 0; i < src.size(); ++i) {
        const float f = src[i];
        CAPTURE(f);
        CHECK(std::signbit(back[i]) == std::signbit(f));
        if (std::fabs(f) >= 65520.0f) {
            CHECK(std::isinf(back[i]));
            continue;
        }
        // No neighbouring half is closer; on a tie the even mantissa wins.
        const uint16_t mag = h[i] & 0x7fffu, sign = h[i] & 0x8000u;
        for (int step : {-1, 1}) {
            const int nb = int(mag) + step;
            if (nb < 0 || nb > 0x7bff) continue;
            const float neighbour = quant::f16_to_f32(uint16_t(sign | uint16_t(nb)));
            CHECK(dist(f, back[i]) <= dist(f, neighbour));
            if (dist(f, back[i]) == dist(f, neighbour)) CHECK((mag & 1u) == 0);
        }
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    CHECK(std::isnan(quant::f16_to_f32(quant::f32_to_f16(nan))));
}

TEST_CASE("bf16 conversions: every bf16 round-trips and random f32 round to the nearest bf16") {
    for (uint32_t b = 0; b < 65536; ++b) {
        const float f = quant::bf16_to_f32(uint16_t(b));
        if (std::isnan(f)) {
            CHECK(std::isnan(quant::bf16_to_f32(quant::f32_to_bf16(f))));
        } else if (quant::f32_to_bf16(f) != b) {
            CAPTURE(b);
            CHECK(quant::f32_to_bf16(f) == b);
        }
    }
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    std::vector<float> src(20000);
    for (auto& v : src) {  // random bit patterns: every exponent, subnormals and infinities included
        const uint32_t bits = uint32_t(rng());
        v = quant::bits_to_f32(bits);
        if (std::isnan(v)) v = quant::bits_to_f32(bits & 0xff7fffffu);  // keep NaN out of the nearest check
    }
    std::vector<uint16_t> h(src.size());
    quant::quantize_row(quant::kTypeBF16, src.data(), h.data(), int64_t(src.size()), nullptr);
    std::vector<float> back(src.size());
    quant::dequantize_row(quant::kTypeBF16, h.data(), back.data(), int64_t(src.size()));
    for (size_t i = 0; i < src.size(); ++i) {
        const float f = src[i];
        CAPTURE(f);
        if (std::isinf(f)) {
            CHECK(back[i] == f);
            continue;
        }
        const uint16_t mag = h[i] & 0x7fffu, sign = h[i] & 0x8000u;
        if (mag >= 0x7f80u) {  // rounded up to infinity: only beyond the largest finite bf16 + half a step
            CHECK(std::fabs(double(f)) >= double(quant::bf16_to_f32(0x7f7f)));
            continue;
        }
        for (int step : {-1, 1}) {
            const int nb = int(mag) + step;
            if (nb < 0 || nb > 0x7f7f) continue;
            const float neighbour = quant::bf16_to_f32(uint16_t(sign | uint16_t(nb)));
            CHECK(dist(f, back[i]) <= dist(f, neighbour));
            if (dist(f, back[i]) == dist(f, neighbour)) CHECK((mag & 1u) == 0);
        }
    }
}

TEST_CASE("Q8_0 quantizes a hand-computed block exactly, and an all-zero block to zeros") {
    // Block 0: max |x| = 127 so d = 1 (f16 0x3C00) and q = roundf(x), halves away from zero.
    float x[64] = {};
    const float vals[] = {127.0f, -63.5f, 2.5f, -2.5f, 0.49f, -0.51f, 100.2f, -127.0f};
    const int8_t expect[] = {127, -64, 3, -3, 0, -1, 100, -127};
    for (int j = 0; j < 32; ++j) x[j] = j < 8 ? vals[j] : float(j - 20);
    // Block 1: all zero -> d = 0, q = 0 (id = 0 avoids 0/0).
    quant::block_q8_0 y[2];
    quant::quantize_row(quant::kTypeQ8_0, x, y, 64, nullptr);
    CHECK(y[0].d == 0x3C00);
    for (int j = 0; j < 32; ++j) {
        CAPTURE(j);
        CHECK(y[0].qs[j] == (j < 8 ? expect[j] : int8_t(j - 20)));
    }
    CHECK(y[1].d == 0);
    for (int8_t q : y[1].qs) CHECK(q == 0);

    // A scale that is not exact in f16: max |x| = 1 -> d = 1/127 stored as f16, q still = 127.
    float z[32];
    for (int j = 0; j < 32; ++j) z[j] = float(j) / 31.0f;
    quant::block_q8_0 w;
    quant::quantize_row_q8_0(z, &w, 32);
    CHECK(w.d == quant::f32_to_f16(1.0f / 127.0f));
    CHECK(w.qs[31] == 127);
    CHECK(w.qs[0] == 0);
    CHECK(w.qs[15] == int8_t(std::roundf(15.0f / 31.0f * (1.0f / (1.0f / 127.0f)))));
}

TEST_CASE("Q8_0 round trip of random values stays within half a step plus the f16 scale error") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    auto x = test::random_normal(rng, 32 * 64);
    for (size_t i = 0; i < x.size(); ++i) x[i] *= std::exp2(float(int(i / 32) % 20 - 10));  // scales 2^-10..2^9
    std::vector<uint8_t> q(quant::row_size(quant::kTypeQ8_0, int64_t(x.size())));
    REQUIRE(q.size() == 34 * 64);
    quant::quantize_row(quant::kTypeQ8_0, x.data(), q.data(), int64_t(x.size()), nullptr);
    std::vector<float> back(x.size());
    quant::dequantize_row(quant::kTypeQ8_0, q.data(), back.data(), int64_t(x.size()));
    for (size_t b = 0; b < 64; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[b * 32 + size_t(j)]));
        const float d = amax / 127.0f;
        for (int j = 0; j < 32; ++j) {
            const size_t i = b * 32 + size_t(j);
            CAPTURE(i);
            // |x - q d| <= d/2, and the f16 scale moves q d by at most 127 half-ulps of d: 2^-11 d
            // relative for a normal half, 2^-25 absolute below 2^-14 (subnormal halves).
            const float scale_error = std::fmax(d * 0x1p-11f, 0x1p-25f);
            CHECK(std::fabs(back[i] - x[i]) <= (d * 0.5f + 127.0f * scale_error) * 1.0001f);
        }
    }
}

TEST_CASE("the format dispatch knows its types, sizes rows and rejects what it cannot do") {
    using namespace quant;
    for (uint32_t t : {0u, 1u, 2u, 3u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 13u, 14u, 15u, 16u, 17u, 18u, 19u, 20u, 21u,
                       22u, 23u, 29u, 30u, 34u, 35u, 39u, 41u})
        CHECK(is_supported(t));
    // Removed ids, ggml's integer types, and types strata does not decode yet (nvfp4, q2_0).
    for (uint32_t t : {4u, 5u, 24u, 28u, 31u, 36u, 40u, 42u, 1000u}) CHECK_FALSE(is_supported(t));
    CHECK(row_size(kTypeF32, 10) == 40);
    CHECK(row_size(kTypeF16, 10) == 20);
    CHECK(row_size(kTypeBF16, 10) == 20);
    CHECK(row_size(kTypeQ8_0, 64) == 68);
    CHECK(row_size(kTypeQ8_K, 512) == 584);
    CHECK(row_size(kTypeIQ1_S, 4096) == 800);
    CHECK_THROWS_AS(row_size(kTypeIQ1_S, 100), Error);
    CHECK_THROWS_AS(row_size(kTypeQ8_0, -32), Error);
    CHECK_THROWS_AS(row_size(kTypeF32, int64_t(1) << 62), Error);
    float f[32] = {};
    uint8_t buf[64] = {};
    try {
        dequantize_row(40, buf, f, 64);  // nvfp4: not decoded
        FAIL("no exception");
    } catch (const Error& e) {
        CHECK(e.status() == Status::unsupported);
        const std::string msg = e.what();
        CHECK(msg.find("40") != std::string::npos);
        CHECK(msg.find("iq1_m") != std::string::npos);  // names what it supports
    }
    CHECK_THROWS_AS(quantize_row(kTypeQ8_0, f, buf, 31, nullptr), Error);
    CHECK_THROWS_AS(dequantize_row(kTypeF32, nullptr, f, 4), Error);
}

TEST_CASE("every type's traits agree with the GGUF reader's type table and pair it as ggml does") {
    using namespace quant;
    int n = 0;
    for (uint32_t id = 0; id < gguf::kGgmlTypeCount; ++id) {
        const TypeTraits* t = find_type_traits(id);
        if (!t) continue;
        ++n;
        CAPTURE(id);
        const gguf::GgmlTypeInfo* info = gguf::ggml_type_info(id);
        REQUIRE(info);
        CHECK(std::string(t->name) == info->name);
        CHECK(uint64_t(t->block_elements) == info->block_size);
        CHECK(t->block_bytes == info->type_size);
        CHECK(bool(t->decode));
        CHECK(row_size(id, t->block_elements * 3) == 3 * t->block_bytes);
        if (t->dot_type == kTypeF32) {
            CHECK_FALSE(bool(t->dot_scalar));
            continue;
        }
        const TypeTraits* act = find_type_traits(t->dot_type);
        REQUIRE(act);
        CHECK(bool(act->quantize));  // activations can be written
        CHECK(t->block_elements % act->block_elements == 0);  // a weight block spans whole activation blocks
        if (id != kTypeQ8_1 && id != kTypeQ8_K) CHECK(bool(t->dot_scalar));
    }
    CHECK(n == 28);
    // ggml-cpu's vec_dot_type pairing.
    CHECK(find_type_traits(kTypeQ4_1)->dot_type == kTypeQ8_1);
    CHECK(find_type_traits(kTypeQ5_0)->dot_type == kTypeQ8_0);
    CHECK(find_type_traits(kTypeIQ4_NL)->dot_type == kTypeQ8_0);
    CHECK(find_type_traits(kTypeIQ4_XS)->dot_type == kTypeQ8_K);
    CHECK(find_type_traits(kTypeQ1_0)->dot_type == kTypeQ8_0);
    CHECK(find_type_traits(kTypeTQ2_0)->dot_type == kTypeQ8_K);
}

TEST_CASE("dequantize_row(IQ1_S) decodes every fixture bit for bit") {
    for (const char* name : test::kIq1sCases) {
        CAPTURE(name);
        const auto bytes = test::read_npy(test::iq1s_fixture(name, "iq1s")).data;
        const auto expected = test::read_npy(test::iq1s_fixture(name, "dequant")).as<uint32_t>();
        std::vector<float> got(expected.size());
        quant::dequantize_row(quant::kTypeIQ1_S, bytes.data(), got.data(), int64_t(got.size()));
        size_t mismatches = 0;
        for (size_t i = 0; i < got.size(); ++i) mismatches += quant::f32_to_bits(got[i]) != expected[i];
        CHECK(mismatches == 0);
    }
}

TEST_CASE("quantize_row(IQ1_S) hands the row and its imatrix to the IQ1_S quantizer unchanged") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const auto x = test::random_normal(rng, 512);
    std::vector<float> imatrix(512);
    std::uniform_real_distribution<float> u(0.1f, 10.0f);
    for (auto& v : imatrix) v = u(rng);
    std::vector<uint8_t> via_dispatch(quant::row_size(quant::kTypeIQ1_S, 512)), direct(via_dispatch.size());
    REQUIRE(via_dispatch.size() == 100);
    quant::quantize_row(quant::kTypeIQ1_S, x.data(), via_dispatch.data(), 512, imatrix.data());
    quant::quantize_row_iq1s(x.data(), direct.data(), 512, imatrix.data());
    CHECK(via_dispatch == direct);
    // And it decodes to something close to x (IQ1_S relative RMSE is about 0.5 on Gaussian data).
    std::vector<float> back(512);
    quant::dequantize_row(quant::kTypeIQ1_S, via_dispatch.data(), back.data(), 512);
    double err = 0, ref = 0;
    for (size_t i = 0; i < 512; ++i) {
        err += (double(back[i]) - x[i]) * (double(back[i]) - x[i]);
        ref += double(x[i]) * x[i];
    }
    CHECK(std::sqrt(err / ref) < 0.8);
}
