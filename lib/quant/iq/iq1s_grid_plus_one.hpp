// kIq1sGrid with 1 added to every byte (-1, 0, +1 -> 0, 1, 2), built at compile time: the SIMD
// kernels multiply it as unsigned bytes (vpmaddubsw) or use it as a byte-shuffle index. Data only,
// so files compiled for any instruction set may include it.
#pragma once

#include <array>
#include <cstdint>

#include "quant/iq/iq1s_block.hpp"

namespace strata::quant {

consteval std::array<uint64_t, kIq1sGridSize> make_iq1s_grid_plus_one() {
    std::array<uint64_t, kIq1sGridSize> out{};
    for (int i = 0; i < kIq1sGridSize; ++i)
        for (int j = 0; j < 8; ++j) out[size_t(i)] |= uint64_t(uint8_t((kIq1sGrid[i] >> (8 * j)) + 1)) << (8 * j);
    return out;
}
alignas(64) inline constexpr std::array<uint64_t, kIq1sGridSize> kIq1sGridPlusOne = make_iq1s_grid_plus_one();

}  // namespace strata::quant
