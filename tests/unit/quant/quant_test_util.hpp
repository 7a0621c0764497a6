// Shared by the quant tests: random IQ1_S blocks with sane scales, Q8_K / Q8_0 / Q8_1 activations,
// binary16 scale fields, and element-wise checks of decoded rows.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

#include "quant/half.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/codecs/legacy_quants.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/q8_k.hpp"
#include "util/cpu_features.hpp"

namespace strata::test {

// The AVX2 kernels run (and are tested) only where the CPU has all the features they use.
inline bool have_avx2_kernels() { return util::has_avx2_kernels(); }

// have_avx2_kernels(), with the reason logged when not (a test comparing kernels then returns).
inline bool avx2_kernels_or_skip() {
    if (have_avx2_kernels()) return true;
    MESSAGE("skipped: this CPU (or STRATA_CPU=scalar) has no AVX2+FMA+F16C");
    return false;
}

// Random bytes for qs/qh (every index, scale code and sign reachable) and d = +-10^U(-3,0) as f16.
inline quant::block_iq1_s random_iq1s_block(std::mt19937_64& rng) {
    quant::block_iq1_s b;
    for (auto& q : b.qs) q = uint8_t(rng());
    for (auto& h : b.qh) h = uint16_t(rng());
    std::uniform_real_distribution<float> exponent(-3.0f, 0.0f);
    const float d = std::pow(10.0f, exponent(rng)) * ((rng() & 1) ? -1.0f : 1.0f);
    b.d = quant::f32_to_f16(d);
    return b;
}

inline std::vector<quant::block_iq1_s> random_iq1s_matrix(std::mt19937_64& rng, int64_t rows, int64_t cols) {
    std::vector<quant::block_iq1_s> w(size_t(rows * cols / quant::kQK_K));
    for (auto& b : w) b = random_iq1s_block(rng);
    return w;
}

// N(0,1) values with no exact zeros.
inline std::vector<float> random_normal(std::mt19937_64& rng, int64_t n) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) {
        do v = normal(rng);
        while (v == 0.0f);
    }
    return x;
}

// Any int8 values (-128 included) with consistent bsums and a random scale: wider than what the
// Q8_K quantizer produces, to exercise the kernels' integer range.
inline quant::block_q8_K random_q8k_block(std::mt19937_64& rng) {
    quant::block_q8_K y;
    for (auto& q : y.qs) q = int8_t(uint8_t(rng()));
    for (int i = 0; i < 16; ++i) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += y.qs[16 * i + j];
        y.bsums[i] = int16_t(sum);
    }
    std::normal_distribution<float> normal(0.0f, 0.01f);
    y.d = normal(rng);
    return y;
}

template <typename T>
std::vector<T> blocks_from_bytes(const std::vector<uint8_t>& bytes) {
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
}

using DecodeFn = void (*)(const void*, float*, int64_t);
using DotFn = float (*)(int64_t, const void*, const void*);

// A binary16 field at p (blocks keep their scales unaligned).
inline void put_f16(uint8_t* p, float v) {
    const uint16_t h = quant::f32_to_f16(v);
    std::memcpy(p, &h, 2);
}

inline float get_f16(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return quant::f16_to_f32(h);
}

// +-10^U(-3, 0): scales of realistic size, both signs.
inline float random_scale(std::mt19937_64& rng) {
    std::uniform_real_distribution<float> exponent(-3.0f, 0.0f);
    return std::pow(10.0f, exponent(rng)) * ((rng() & 1) ? -1.0f : 1.0f);
}

// n copies of fill, then the listed (index, value) overrides.
inline std::vector<float> expect(size_t n, float fill, std::initializer_list<std::pair<size_t, float>> at) {
    std::vector<float> v(n, fill);
    for (auto [i, x] : at) v[i] = x;
    return v;
}

// got == want element by element, as floats (-0.0 equals 0.0).
inline void check_equal(const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        CHECK(got[i] == want[i]);
    }
}

// got == want element by element, bit for bit (-0.0 vs 0.0 too).
inline void check_bits_equal(const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        CHECK(quant::f32_to_bits(got[i]) == quant::f32_to_bits(want[i]));
    }
}

// n values decoded from the blocks at &b by a row decoder (NaN where it writes nothing).
template <typename Block>
std::vector<float> decode(DecodeFn fn, const Block& b, int64_t n = quant::kQK_K) {
    std::vector<float> y(size_t(n), std::nanf(""));
    fn(&b, y.data(), n);
    return y;
}

// The activation formats of the dots.
enum class Act { q8_0, q8_1, q8_K };

inline int64_t act_block_elements(Act act) { return act == Act::q8_K ? quant::kQK_K : quant::kQK8_0; }

// One activation row, with what the checks need to know about it.
struct Activations {
    std::vector<uint8_t> bytes;  // the blocks as the kernels read them
    std::vector<int> qs;         // the n int8 values
    std::vector<double> value;   // d * qs, exactly
    std::vector<double> s;       // Q8_1: the stored s of each block (as float)
    std::vector<double> s_error; // Q8_1: s - d * sum(qs) per block (the format's own rounding)
};

// The blocks of the int8 values qs (bsums consistent): unit: d = 1 (and Q8_1's s = binary16 of
// sum qs), else d ~ N(0, 0.01) for Q8_K and random_scale() for Q8_0 / Q8_1.
inline Activations activations_of(Act act, std::vector<int> qs, std::mt19937_64& rng, bool unit) {
    Activations a;
    a.qs = std::move(qs);
    a.value.resize(a.qs.size());
    const int64_t be = act_block_elements(act);
    for (int64_t b = 0; b < int64_t(a.qs.size()) / be; ++b) {
        const int* q = a.qs.data() + b * be;
        int sum = 0;
        for (int j = 0; j < be; ++j) sum += q[j];
        double d = 0;
        if (act == Act::q8_K) {
            quant::block_q8_K y{};
            std::normal_distribution<float> normal(0.0f, 0.01f);
            y.d = unit ? 1.0f : normal(rng);
            for (int j = 0; j < be; ++j) y.qs[j] = int8_t(q[j]);
            for (int i = 0; i < quant::kQK_K / 16; ++i) {
                int s16 = 0;
                for (int j = 0; j < 16; ++j) s16 += q[16 * i + j];
                y.bsums[i] = int16_t(s16);
            }
            d = y.d;
            const auto* p = reinterpret_cast<const uint8_t*>(&y);
            a.bytes.insert(a.bytes.end(), p, p + sizeof y);
        } else if (act == Act::q8_0) {
            quant::block_q8_0 y{};
            y.d = quant::f32_to_f16(unit ? 1.0f : random_scale(rng));
            for (int j = 0; j < be; ++j) y.qs[j] = int8_t(q[j]);
            d = quant::f16_to_f32(y.d);
            const auto* p = reinterpret_cast<const uint8_t*>(&y);
            a.bytes.insert(a.bytes.end(), p, p + sizeof y);
        } else {
            quant::block_q8_1 y{};
            y.d = quant::f32_to_f16(unit ? 1.0f : random_scale(rng));
            for (int j = 0; j < be; ++j) y.qs[j] = int8_t(q[j]);
            d = quant::f16_to_f32(y.d);
            y.s = quant::f32_to_f16(float(sum) * float(d));  // as quantize_row_q8_1 writes it
            a.s.push_back(quant::f16_to_f32(y.s));
            a.s_error.push_back(double(quant::f16_to_f32(y.s)) - d * sum);
            const auto* p = reinterpret_cast<const uint8_t*>(&y);
            a.bytes.insert(a.bytes.end(), p, p + sizeof y);
        }
        for (int j = 0; j < be; ++j) a.value[size_t(b * be + j)] = d * q[j];
    }
    return a;
}

}  // namespace strata::test
