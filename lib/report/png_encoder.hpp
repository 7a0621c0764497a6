// A minimal PNG writer for the report plots: 8-bit RGB, filter None, the image data deflated by
// zlib (a plot is mostly flat background: a 1000 x 600 plot shrinks from 1.8 MB to a few KB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace strata::report {

// CRC-32 (ISO-HDLC, the one PNG and zlib use), continued from `crc` (0 to start).
uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> bytes);

// PNG bytes of a width x height RGB image (rgb: 3 bytes per pixel, rows top to bottom).
// Throws Error invalid_argument for a zero or oversize dimension or a short buffer.
std::vector<uint8_t> encode_png_rgb(uint32_t width, uint32_t height, std::span<const uint8_t> rgb);

}  // namespace strata::report
