// Random inputs shared by the quant tests: IQ1_S blocks with sane scales, Q8_K activations.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "quant/half.hpp"
#include "quant/iq1s_block.hpp"
#include "quant/q8_k.hpp"
#include "util/cpu_features.hpp"

namespace strata::test {

// The AVX2 kernels run (and are tested) only where the CPU has all the features they use.
inline bool have_avx2_kernels() {
    const auto& f = util::cpu_features();
    return f.avx2 && f.fma && f.f16c;
}

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

}  // namespace strata::test
