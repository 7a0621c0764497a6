#include "transport/crc32c.hpp"

#include <array>

namespace strata::transport {
namespace {

constexpr std::array<uint32_t, 256> make_table() {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    return table;
}

constexpr auto kTable = make_table();

}  // namespace

uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc) {
    // Pre- and post-inversion are applied here so that chained calls compose.
    crc = ~crc;
    for (uint8_t b : bytes) crc = kTable[(crc ^ b) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

}  // namespace strata::transport
