// The sampler's random numbers, identical on every platform and compiler: xoshiro256**
// (Blackman & Vigna) seeded through splitmix64, and a uniform float built from the top 24
// bits. std::*_distribution is implementation-defined, so it is never used for sampling.
#pragma once

#include <cstdint>

namespace strata::sample {

// splitmix64: expands one 64-bit seed into a stream of well-mixed 64-bit words.
inline uint64_t splitmix64_next(uint64_t& state) {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

class Rng {
public:
    explicit Rng(uint64_t seed) { reseed(seed); }

    // The four state words are the first four splitmix64 outputs from `seed`; they are never
    // all zero (splitmix64 is a bijection of its counter, so four consecutive outputs differ).
    void reseed(uint64_t seed) {
        uint64_t sm = seed;
        for (auto& word : s_) word = splitmix64_next(sm);
    }

    uint64_t next() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Uniform in [0, 1) on the grid k / 2^24: exact in float and in double.
    double uniform24() { return double(next() >> 40) * (1.0 / 16777216.0); }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

}  // namespace strata::sample
