#include "report/png_encoder.hpp"

#include <zlib.h>

#include <array>
#include <string>

#include "util/error.hpp"

namespace strata::report {

namespace {

std::array<uint32_t, 256> make_crc_table() {
    std::array<uint32_t, 256> table{};
    for (uint32_t n = 0; n < 256; ++n) {
        uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;  // reflected 0x04C11DB7
        table[n] = c;
    }
    return table;
}

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
    out.push_back(uint8_t(v >> 24));
    out.push_back(uint8_t(v >> 16));
    out.push_back(uint8_t(v >> 8));
    out.push_back(uint8_t(v));
}

// length, type, data, CRC over type + data.
void put_chunk(std::vector<uint8_t>& out, const char type[4], std::span<const uint8_t> data) {
    put_be32(out, uint32_t(data.size()));
    const size_t type_at = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data.begin(), data.end());
    const uint32_t crc = crc32_update(0, std::span<const uint8_t>(out.data() + type_at, 4 + data.size()));
    put_be32(out, crc);
}

}  // namespace

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> bytes) {
    static const std::array<uint32_t, 256> table = make_crc_table();
    uint32_t c = crc ^ 0xFFFFFFFFu;
    for (uint8_t b : bytes) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

std::vector<uint8_t> encode_png_rgb(uint32_t width, uint32_t height, std::span<const uint8_t> rgb) {
    // 16384 x 16384 keeps every size below in 32 bits with room to spare.
    if (width == 0 || height == 0 || width > 16384 || height > 16384)
        fail(Status::invalid_argument, "PNG size " + std::to_string(width) + "x" + std::to_string(height) + " out of range");
    const size_t row = size_t(width) * 3;
    if (rgb.size() < row * height) fail(Status::invalid_argument, "PNG pixel buffer shorter than width x height x 3");

    // The filtered image: each row is filter type 0 (None) followed by its pixels.
    std::vector<uint8_t> raw;
    raw.reserve((row + 1) * height);
    for (uint32_t y = 0; y < height; ++y) {
        raw.push_back(0);
        raw.insert(raw.end(), rgb.begin() + std::ptrdiff_t(y * row), rgb.begin() + std::ptrdiff_t((y + 1) * row));
    }

    // The zlib stream (header, deflate, Adler-32) that IDAT holds.
    uLongf z_size = compressBound(uLong(raw.size()));
    std::vector<uint8_t> z(z_size);
    if (compress2(z.data(), &z_size, raw.data(), uLong(raw.size()), Z_BEST_COMPRESSION) != Z_OK)
        fail(Status::internal, "zlib could not compress the PNG image data");
    z.resize(z_size);

    std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    std::vector<uint8_t> ihdr;
    put_be32(ihdr, width);
    put_be32(ihdr, height);
    ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // bit depth 8, colour type 2 (RGB), deflate, filter 0, no interlace
    put_chunk(png, "IHDR", ihdr);
    put_chunk(png, "IDAT", z);
    put_chunk(png, "IEND", {});
    return png;
}

}  // namespace strata::report
