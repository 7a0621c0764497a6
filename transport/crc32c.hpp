// CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the frame payload checksum.
// Catches corruption that TCP's 16-bit checksum lets through; not an authenticator.
#pragma once

#include <cstdint>
#include <span>

namespace strata::transport {

// crc32c(b) of a whole buffer; pass a previous result as `crc` to continue over pieces.
// Uses the SSE4.2 crc32 instruction where the CPU has it.
uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0);

// The table-driven reference, on every CPU (the tests hold the fast path to it).
uint32_t crc32c_portable(std::span<const uint8_t> bytes, uint32_t crc = 0);

}  // namespace strata::transport
