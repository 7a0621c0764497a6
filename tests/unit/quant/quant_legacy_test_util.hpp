// Generic checks of one weight type's dot kernels against its decode, shared by
// test_quant_legacy.cpp and test_quant_ternary.cpp. A type is described by a DotSpec (its block
// geometry, activation format, decode and dot functions, and how to write its scale fields);
// the checks build random rows from bytes, so every code the format can hold is exercised.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "quant/half.hpp"
#include "quant/codecs/legacy_quants.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant_test_util.hpp"
#include "test_support.hpp"

namespace strata::test::legacy {

// The activation formats, the activation rows and the scale-field helpers of quant_test_util.hpp.
using test::Act;
using test::Activations;
using test::get_f16;
using test::put_f16;
using test::random_scale;

struct DotSpec {
    const char* name;
    int64_t block_elements;
    size_t block_bytes;
    Act act;
    DecodeFn decode;
    DotFn scalar;
    DotFn avx2 = nullptr;            // null: no AVX2 kernel
    bool avx2_needs_no_minus128 = false;  // activations in [-127, 127] (vec_dot_q8_0_q8_0_avx2)
    // Scale fields of one block: unit (decoded weights are then the integer codes, no min) or random.
    void (*set_unit)(uint8_t* block) = nullptr;
    void (*set_random)(uint8_t* block, std::mt19937_64& rng) = nullptr;
    bool has_min = false;  // Q4_1 / Q5_1: binary16 m at byte 2, dotted through Q8_1's s
};

// unit: d = 1 (and s = binary16 of sum qs). no_minus128: int8 values in [-127, 127].
inline Activations make_activations(Act act, int64_t n, std::mt19937_64& rng, bool unit, bool no_minus128) {
    std::vector<int> qs(static_cast<size_t>(n));
    for (auto& q : qs) {
        do q = int8_t(uint8_t(rng()));
        while (no_minus128 && q == -128);
    }
    return activations_of(act, std::move(qs), rng, unit);
}

inline std::vector<uint8_t> make_weights(const DotSpec& spec, int64_t nb, std::mt19937_64& rng, bool unit) {
    std::vector<uint8_t> w(size_t(nb) * spec.block_bytes);
    for (auto& byte : w) byte = uint8_t(rng());
    for (int64_t b = 0; b < nb; ++b) {
        uint8_t* block = w.data() + size_t(b) * spec.block_bytes;
        if (unit) spec.set_unit(block);
        else spec.set_random(block, rng);
    }
    return w;
}

inline std::vector<float> decoded(const DotSpec& spec, const std::vector<uint8_t>& w) {
    const int64_t n = int64_t(w.size() / spec.block_bytes) * spec.block_elements;
    std::vector<float> y(static_cast<size_t>(n));
    spec.decode(w.data(), y.data(), n);
    return y;
}

// (1) Single blocks with unit scales: each kernel returns exactly the integer sum of the decoded
// weights (then integer codes) times the int8 activations, computed here independently. For the
// types with a min, m = 1 adds exactly the activation block's s.
inline void check_block_integer_sums(const DotSpec& spec, std::mt19937_64& rng, int trials) {
    const bool avx2 = spec.avx2 && have_avx2_kernels();
    for (int t = 0; t < trials; ++t) {
        CAPTURE(t);
        auto w = make_weights(spec, 1, rng, true);
        const auto codes = decoded(spec, w);
        const auto x = make_activations(spec.act, spec.block_elements, rng, true, spec.avx2_needs_no_minus128);
        int64_t sumi = 0;
        for (size_t j = 0; j < codes.size(); ++j) {
            REQUIRE(codes[j] == std::trunc(codes[j]));  // unit scale: integer codes
            sumi += int64_t(codes[j]) * x.qs[j];
        }
        CHECK(spec.scalar(spec.block_elements, w.data(), x.bytes.data()) == float(sumi));
        if (avx2) CHECK(spec.avx2(spec.block_elements, w.data(), x.bytes.data()) == float(sumi));
        if (spec.has_min) {
            put_f16(w.data() + 2, 1.0f);
            const float want = float(sumi) + float(x.s[0]);  // both integers below 2^24: exact
            CHECK(spec.scalar(spec.block_elements, w.data(), x.bytes.data()) == want);
            if (avx2) CHECK(spec.avx2(spec.block_elements, w.data(), x.bytes.data()) == want);
        }
    }
}

// The float64 value the kernels approximate, and a bound on their float32 error.
struct RowReference {
    double value, bound;
};

// value: decoded weights x dequantized activations (+ for the min types the known binary16
// rounding of each s, which the kernels use instead of d * sum(qs): part of the format).
// bound: each block's contribution is rounded at most 10 times (scale products, product with
// the integer sum, min term, adds; Q1_0's four sub-block terms are the most) and the running
// float32 sum once per block, each by at most 2^-24 of T = sum of |terms|; the decoded min-type
// weights carry 2 roundings each. So |error| <= (nb + 10) * 2^-24 * T, and the check allows
// (nb + 8) * 2^-22 * T, at least that.
inline RowReference row_reference(const DotSpec& spec, const std::vector<uint8_t>& w, const Activations& x) {
    const auto wd = decoded(spec, w);
    const int64_t nb = int64_t(w.size() / spec.block_bytes);
    double value = 0, terms = 0;
    for (int64_t b = 0; b < nb; ++b) {
        const double m = spec.has_min ? get_f16(w.data() + size_t(b) * spec.block_bytes + 2) : 0.0;
        for (int64_t j = b * spec.block_elements; j < (b + 1) * spec.block_elements; ++j) {
            value += double(wd[size_t(j)]) * x.value[size_t(j)];
            terms += (std::fabs(double(wd[size_t(j)]) - m) + std::fabs(m)) * std::fabs(x.value[size_t(j)]);
        }
        if (spec.has_min) {
            value += m * x.s_error[size_t(b)];
            terms += std::fabs(m * x.s[size_t(b)]);
        }
    }
    return {value, double(nb + 8) * std::ldexp(1.0, -22) * terms};
}

// (2) Rows of odd block counts with random scales against the float64 reference, and (3) the
// AVX2 kernel against the scalar one (both within the bound of the reference, so within twice
// it of each other), and exactly equal on unit-scale rows of several blocks (every partial sum
// is then an integer below 2^24).
inline void check_rows(const DotSpec& spec, std::mt19937_64& rng) {
    const bool avx2 = spec.avx2 && have_avx2_kernels();
    for (int64_t nb : {1, 3, 17, 128}) {
        CAPTURE(nb);
        const int64_t n = nb * spec.block_elements;
        for (int t = 0; t < 8; ++t) {
            CAPTURE(t);
            const auto w = make_weights(spec, nb, rng, false);
            const auto x = make_activations(spec.act, n, rng, false, spec.avx2_needs_no_minus128);
            const RowReference ref = row_reference(spec, w, x);
            const float s = spec.scalar(n, w.data(), x.bytes.data());
            CHECK(std::fabs(double(s) - ref.value) <= ref.bound);
            if (avx2) {
                const float a = spec.avx2(n, w.data(), x.bytes.data());
                CHECK(std::fabs(double(a) - ref.value) <= ref.bound);
                CHECK(std::fabs(double(a) - double(s)) <= 2 * ref.bound);
            }
        }
        if (avx2 && nb <= 17) {  // 17 blocks of |sum| <= 32 * 128 * 127 stay below 2^24
            const auto w = make_weights(spec, nb, rng, true);
            const auto x = make_activations(spec.act, n, rng, true, spec.avx2_needs_no_minus128);
            CHECK(spec.avx2(n, w.data(), x.bytes.data()) == spec.scalar(n, w.data(), x.bytes.data()));
        }
    }
}

// Every spec of a table through (1) or through (2) and (3), one generator seeded by test_seed().
template <size_t N>
void check_block_integer_sums(const DotSpec (&specs)[N], int trials) {
    const uint64_t seed = test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (const auto& spec : specs) {
        CAPTURE(spec.name);
        check_block_integer_sums(spec, rng, trials);
    }
}

template <size_t N>
void check_rows(const DotSpec (&specs)[N]) {
    const uint64_t seed = test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (const auto& spec : specs) {
        CAPTURE(spec.name);
        check_rows(spec, rng);
    }
}

}  // namespace strata::test::legacy
