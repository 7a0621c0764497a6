// Random weight blocks of every quantized type the CUDA backend takes, for its tests and the kernel
// benchmark (host code, C++17): random bytes, so every code, grid index, sign and scale code
// occurs, with each block's scale fields set to finite values of moderate size (binary16
// d = +-2^U(-10,-4); MXFP4's exponent byte in 117..130), so that products stay finite and
// comparable. Blocks are built this way because most of these types have no quantizer in strata
// (read only, as llama.cpp's quantizer writes them).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "quant/half.hpp"
#include "quant/iq/iq1m_block.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/iq/iq2_block.hpp"
#include "quant/iq/iq3_block.hpp"
#include "quant/iq/iq4_nl.hpp"
#include "quant/iq/iq4_xs.hpp"
#include "quant/codecs/k_quants.hpp"
#include "quant/codecs/legacy_quants.hpp"
#include "quant/codecs/mxfp4.hpp"
#include "quant/codecs/q1_0.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/ternary.hpp"
#include "quant/type_ids.hpp"
#include "quant/type_traits.hpp"

namespace strata::cuda {

// +-2^U(-10,-4) as binary16, from 64 random bits.
inline uint16_t random_f16_scale(uint64_t bits) {
    const float u = float(bits >> 40) / float(1u << 24);  // [0, 1)
    return quant::f32_to_f16(std::exp2(-10.0f + 6.0f * u) * ((bits & 1) ? -1.0f : 1.0f));
}

// Offsets of the binary16 scale fields of one block of `type` (empty for IQ1_M and MXFP4, whose
// scales are not plain fields; see random_blocks).
inline std::vector<size_t> f16_fields(uint32_t type) {
    using namespace quant;
    switch (type) {
    case kTypeQ4_0: return {offsetof(block_q4_0, d)};
    case kTypeQ4_1: return {offsetof(block_q4_1, d), offsetof(block_q4_1, m)};
    case kTypeQ5_0: return {offsetof(block_q5_0, d)};
    case kTypeQ5_1: return {offsetof(block_q5_1, d), offsetof(block_q5_1, m)};
    case kTypeQ8_0: return {offsetof(block_q8_0, d)};
    case kTypeQ2_K: return {offsetof(block_q2_K, d), offsetof(block_q2_K, dmin)};
    case kTypeQ3_K: return {offsetof(block_q3_K, d)};
    case kTypeQ4_K: return {offsetof(block_q4_K, d), offsetof(block_q4_K, dmin)};
    case kTypeQ5_K: return {offsetof(block_q5_K, d), offsetof(block_q5_K, dmin)};
    case kTypeQ6_K: return {offsetof(block_q6_K, d)};
    case kTypeIQ2_XXS: return {offsetof(block_iq2_xxs, d)};
    case kTypeIQ2_XS: return {offsetof(block_iq2_xs, d)};
    case kTypeIQ2_S: return {offsetof(block_iq2_s, d)};
    case kTypeIQ3_XXS: return {offsetof(block_iq3_xxs, d)};
    case kTypeIQ3_S: return {offsetof(block_iq3_s, d)};
    case kTypeIQ1_S: return {offsetof(block_iq1_s, d)};
    case kTypeIQ4_NL: return {offsetof(block_iq4_nl, d)};
    case kTypeIQ4_XS: return {offsetof(block_iq4_xs, d)};
    case kTypeTQ1_0: return {offsetof(block_tq1_0, d)};
    case kTypeTQ2_0: return {offsetof(block_tq2_0, d)};
    case kTypeQ1_0: return {offsetof(block_q1_0, d)};
    default: return {};
    }
}

// Sets the scale fields of n_blocks blocks of a quantized type (bytes otherwise random) to finite
// values as described above; next() gives 64 random bits.
template <class Next>
void set_random_block_scales(uint32_t type, uint8_t* bytes, size_t n_blocks, Next&& next) {
    const quant::TypeTraits* t = quant::find_type_traits(type);
    const size_t bb = t ? t->block_bytes : 0;
    const std::vector<size_t> fields = f16_fields(type);
    for (size_t i = 0; i < n_blocks; ++i) {
        uint8_t* blk = bytes + i * bb;
        for (size_t off : fields) {
            const uint16_t h = random_f16_scale(next());
            std::memcpy(blk + off, &h, 2);
        }
        if (type == quant::kTypeMXFP4) blk[0] = uint8_t(117 + next() % 14);
        if (type == quant::kTypeIQ1_M) {  // d lives in the top nibbles of the four scale words
            const uint16_t h = random_f16_scale(next());
            uint8_t* sc = blk + offsetof(quant::block_iq1_m, scales);
            for (int w = 0; w < 4; ++w) sc[2 * w + 1] = uint8_t((sc[2 * w + 1] & 0x0fu) | (((h >> (4 * w)) & 0xfu) << 4));
        }
    }
}

// n_blocks random blocks of a quantized type (see above), as bytes.
inline std::vector<uint8_t> random_blocks(uint32_t type, size_t n_blocks, std::mt19937_64& rng) {
    const quant::TypeTraits* t = quant::find_type_traits(type);
    std::vector<uint8_t> bytes(n_blocks * (t ? t->block_bytes : 0));
    for (auto& b : bytes) b = uint8_t(rng());
    set_random_block_scales(type, bytes.data(), n_blocks, [&] { return uint64_t(rng()); });
    return bytes;
}

// A random row-major matrix of a quantized or float type (floats ~N(0, 1)).
inline std::vector<uint8_t> random_matrix(uint32_t type, int64_t rows, int64_t cols, std::mt19937_64& rng) {
    const quant::TypeTraits* t = quant::find_type_traits(type);
    if (!t) return {};
    if (t->block_elements > 1) return random_blocks(type, size_t(rows * (cols / t->block_elements)), rng);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> f(size_t(rows * cols));
    for (auto& v : f) v = nd(rng);
    std::vector<uint8_t> out(size_t(rows * cols) * t->block_bytes);
    t->quantize(f.data(), out.data(), rows * cols, nullptr);
    return out;
}

}  // namespace strata::cuda
