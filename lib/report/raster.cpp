#include "report/raster.hpp"

#include <cstdlib>

#include "util/error.hpp"

namespace strata::report {

namespace {

struct Glyph {
    char c;
    uint8_t rows[7];  // 5 bits each, the most significant of the five on the left
};

// Drawn for this project: the characters tick labels need.
constexpr Glyph kGlyphs[] = {
    {'0', {0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110}},
    {'1', {0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110}},
    {'2', {0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111}},
    {'3', {0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110}},
    {'4', {0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010}},
    {'5', {0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110}},
    {'6', {0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110}},
    {'7', {0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000}},
    {'8', {0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110}},
    {'9', {0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100}},
    {'.', {0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b01100}},
    {'-', {0b00000, 0b00000, 0b00000, 0b11111, 0b00000, 0b00000, 0b00000}},
    {'+', {0b00000, 0b00100, 0b00100, 0b11111, 0b00100, 0b00100, 0b00000}},
    {'e', {0b00000, 0b00000, 0b01110, 0b10001, 0b11111, 0b10000, 0b01110}},
    {' ', {0, 0, 0, 0, 0, 0, 0}},
};
constexpr uint8_t kUnknown[7] = {0b11111, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b11111};

const uint8_t* glyph_rows(char c) {
    for (const Glyph& g : kGlyphs)
        if (g.c == c) return g.rows;
    return kUnknown;
}

}  // namespace

Canvas::Canvas(int width, int height, Rgb background) : width_(width), height_(height), background_(background) {
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384)
        fail(Status::invalid_argument, "canvas size out of range");
    rgb_.resize(size_t(width) * size_t(height) * 3);
    for (size_t i = 0; i < rgb_.size(); i += 3) {
        rgb_[i] = background.r;
        rgb_[i + 1] = background.g;
        rgb_[i + 2] = background.b;
    }
}

void Canvas::set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
    uint8_t* p = &rgb_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
}

Rgb Canvas::get(int x, int y) const {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return background_;
    const uint8_t* p = &rgb_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
    return {p[0], p[1], p[2]};
}

void Canvas::line(int x0, int y0, int x1, int y1, Rgb c) {
    // Bresenham over all octants.
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
        set(x0, y0, c);
        if (x0 == x1 && y0 == y1) return;
        const int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

int Canvas::text(int x, int y, const std::string& s, Rgb c, int scale) {
    for (size_t i = 0; i < s.size(); ++i) {
        const uint8_t* rows = glyph_rows(s[i]);
        const int ox = x + int(i) * 6 * scale;
        for (int row = 0; row < 7; ++row)
            for (int col = 0; col < 5; ++col)
                if (rows[row] & (0b10000 >> col))
                    for (int a = 0; a < scale; ++a)
                        for (int b = 0; b < scale; ++b) set(ox + col * scale + a, y + row * scale + b, c);
    }
    return text_width(s, scale);
}

}  // namespace strata::report
