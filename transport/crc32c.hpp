// CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the frame payload checksum.
// Catches corruption that TCP's 16-bit checksum lets through; not an authenticator.
#pragma once

#include <cstdint>
#include <span>

namespace strata::transport {

// crc32c(b) of a whole buffer; pass a previous result as `crc` to continue over pieces.
uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0);

}  // namespace strata::transport
