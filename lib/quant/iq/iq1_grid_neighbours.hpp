// The IQ1_S grid as a lookup for the IQ1_S and IQ1_M quantizers: each ternary group of eight to its
// grid entry, or, off the grid, to the nearest grid entries (as ggml's iq1 neighbour lists).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "iq1s_block.hpp"

namespace strata::quant {

// A group of eight ternary codes L in {0,1,2} (value L-1) packed two bits each, position j at bits 2j.
// 0xAAAA is the largest key, so 1<<16 covers every key; 0x5555 is the all-zero group.
inline constexpr int kIq1GridKeys = 1 << 16;

struct Iq1GridNeighbours {
    // key -> grid index (>= 0), or -(offset + 1) into `neighbours` for a ternary point off the grid,
    // where neighbours[offset] is the count followed by the candidate indices, nearest first
    // (all grid entries at the three smallest squared distances, ordered by (distance, index));
    // INT32_MIN for a key that is not ternary (some field == 3).
    std::vector<int32_t> map;
    std::vector<uint16_t> neighbours;
    std::array<uint8_t, kIq1sGridSize> neg{}, pos{};  // bit j set: value j of the entry is -1 / +1
    int zero_index = 0;  // the all-zero grid entry (index 0 if the grid had none)
};

// Built on first use (thread-safe); call it once before starting workers to keep them from waiting.
const Iq1GridNeighbours& iq1_grid_neighbours();

}  // namespace strata::quant
