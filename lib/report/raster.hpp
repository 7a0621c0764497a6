// A small RGB canvas for the report plots: pixels, straight lines and a 5x7 bitmap font for the
// tick numbers (digits, '.', '-', '+', 'e'), drawn by hand so no font library is needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::report {

struct Rgb {
    uint8_t r = 0, g = 0, b = 0;
    bool operator==(const Rgb&) const = default;
};

class Canvas {
public:
    Canvas(int width, int height, Rgb background = {255, 255, 255});
    int width() const { return width_; }
    int height() const { return height_; }
    const std::vector<uint8_t>& rgb() const { return rgb_; }

    void set(int x, int y, Rgb c);  // outside the canvas: ignored
    Rgb get(int x, int y) const;    // outside: the background
    void line(int x0, int y0, int x1, int y1, Rgb c);
    // Text in the 5x7 font, top-left at (x, y), `scale` pixels per font pixel; characters the
    // font lacks are drawn as a small box. Returns the width drawn.
    int text(int x, int y, const std::string& s, Rgb c, int scale = 1);
    static int text_width(const std::string& s, int scale = 1) { return int(s.size()) * 6 * scale; }

private:
    int width_, height_;
    Rgb background_;
    std::vector<uint8_t> rgb_;
};

}  // namespace strata::report
