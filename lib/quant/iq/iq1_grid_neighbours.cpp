// The IQ1_S grid neighbour tables; see iq1_grid_neighbours.hpp.
#include "iq1_grid_neighbours.hpp"

#include <bit>
#include <climits>
#include <mutex>

namespace strata::quant {
namespace {

constexpr int kNeighbourLevels = 3;  // distinct distances kept per off-grid point (ggml)

// Bits set in a byte (a table: baseline x86-64 has no popcnt instruction).
constexpr std::array<uint8_t, 256> kBits = [] {
    std::array<uint8_t, 256> t{};
    for (int i = 0; i < 256; ++i) t[size_t(i)] = uint8_t((i & 1) + t[size_t(i >> 1)]);
    return t;
}();

void masks_of_key(uint32_t key, uint8_t& neg, uint8_t& pos) {
    neg = pos = 0;
    for (int j = 0; j < 8; ++j) {
        const uint32_t l = (key >> (2 * j)) & 3u;
        neg |= uint8_t((l == 0) << j);
        pos |= uint8_t((l == 2) << j);
    }
}

Iq1GridNeighbours build_tables() {
    Iq1GridNeighbours t;
    t.map.assign(kIq1GridKeys, INT32_MIN);  // INT32_MIN: not a ternary key (some field == 3)
    for (int k = 0; k < kIq1sGridSize; ++k) {
        uint32_t key = 0;
        for (int j = 0; j < 8; ++j) {
            const int v = iq1s_grid_value(kIq1sGrid[k], j);
            key |= uint32_t(v + 1) << (2 * j);
            t.neg[size_t(k)] |= uint8_t((v < 0) << j);
            t.pos[size_t(k)] |= uint8_t((v > 0) << j);
        }
        t.map[key] = k;
    }
    if (t.map[0x5555] >= 0) t.zero_index = t.map[0x5555];
    // Squared distance between ternary vectors: 1 per position differing by one, 4 by two (a
    // difference of any kind counts 1, opposite signs 3 more). Keep all grid entries at the three
    // smallest distances, ordered by (distance, index) as ggml does.
    std::array<uint8_t, kIq1sGridSize> dist{};
    for (uint32_t key = 0; key < uint32_t(kIq1GridKeys); ++key) {
        bool ternary = true;
        for (int j = 0; j < 8; ++j) ternary &= ((key >> (2 * j)) & 3u) != 3u;
        if (!ternary || t.map[key] >= 0) continue;
        uint8_t neg, pos;
        masks_of_key(key, neg, pos);
        uint64_t levels_present = 0;  // bit d: some entry at distance d (d <= 32)
        for (int k = 0; k < kIq1sGridSize; ++k) {
            const uint8_t gn = t.neg[size_t(k)], gp = t.pos[size_t(k)];
            const int differ = kBits[uint8_t((gn ^ neg) | (gp ^ pos))];
            const int opposite = kBits[uint8_t((gn & pos) | (gp & neg))];
            dist[size_t(k)] = uint8_t(differ + 3 * opposite);
            levels_present |= uint64_t(1) << dist[size_t(k)];
        }
        t.map[key] = -int32_t(t.neighbours.size() + 1);
        const size_t count_at = t.neighbours.size();
        t.neighbours.push_back(0);
        for (int level = 0; level < kNeighbourLevels && levels_present; ++level) {
            const int d = std::countr_zero(levels_present);
            levels_present &= levels_present - 1;
            for (int k = 0; k < kIq1sGridSize; ++k)
                if (dist[size_t(k)] == d) t.neighbours.push_back(uint16_t(k));
        }
        t.neighbours[count_at] = uint16_t(t.neighbours.size() - count_at - 1);
    }
    return t;
}

}  // namespace

const Iq1GridNeighbours& iq1_grid_neighbours() {
    static std::once_flag once;
    static Iq1GridNeighbours t;
    std::call_once(once, [] { t = build_tables(); });
    return t;
}

}  // namespace strata::quant
