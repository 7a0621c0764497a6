// PNG plots: the encoder's CRC-32 against known values; a plot's PNG is taken apart by a reader
// written here (signature, chunk CRCs, IHDR) with zlib inflating the image data, and the pixels
// of a known line are found where the frame says they are.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

#include <zlib.h>

#include "report/png_encoder.hpp"
#include "report/png_plot.hpp"
#include "util/error.hpp"

using namespace strata::report;

namespace {

std::span<const uint8_t> bytes_of(const char* s) { return {reinterpret_cast<const uint8_t*>(s), std::strlen(s)}; }

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

struct Decoded {
    uint32_t width = 0, height = 0;
    std::vector<uint8_t> rgb;
};

// Reads back exactly what encode_png_rgb promises: RGB8, filter 0 rows, one zlib stream.
// Any deviation fails the test with a message.
Decoded decode_png(const std::vector<uint8_t>& png) {
    static const uint8_t kSig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    REQUIRE(png.size() > 8);
    REQUIRE(std::memcmp(png.data(), kSig, 8) == 0);
    Decoded d;
    std::vector<uint8_t> zdata;
    size_t pos = 8;
    std::vector<std::string> order;
    while (pos < png.size()) {
        REQUIRE(pos + 12 <= png.size());
        const uint32_t len = be32(&png[pos]);
        REQUIRE(pos + 12 + len <= png.size());
        const std::string type(reinterpret_cast<const char*>(&png[pos + 4]), 4);
        const uint32_t crc = be32(&png[pos + 8 + len]);
        CHECK(crc == crc32_update(0, std::span<const uint8_t>(&png[pos + 4], 4 + len)));
        const uint8_t* data = &png[pos + 8];
        if (type == "IHDR") {
            REQUIRE(len == 13);
            d.width = be32(data);
            d.height = be32(data + 4);
            CHECK(data[8] == 8);   // bit depth
            CHECK(data[9] == 2);   // RGB
            CHECK(data[10] == 0);
            CHECK(data[11] == 0);
            CHECK(data[12] == 0);
        } else if (type == "IDAT") {
            zdata.insert(zdata.end(), data, data + len);
        }
        order.push_back(type);
        pos += 12 + len;
    }
    REQUIRE(order.size() >= 3);
    CHECK(order.front() == "IHDR");
    CHECK(order.back() == "IEND");
    // zlib inflates the image data (it checks the stream's header and Adler-32).
    const size_t row = size_t(d.width) * 3 + 1;
    std::vector<uint8_t> raw(row * d.height);
    uLongf raw_size = uLongf(raw.size());
    REQUIRE(uncompress(raw.data(), &raw_size, zdata.data(), uLong(zdata.size())) == Z_OK);
    REQUIRE(raw_size == raw.size());
    for (uint32_t y = 0; y < d.height; ++y) {
        REQUIRE(raw[y * row] == 0);  // filter None
        d.rgb.insert(d.rgb.end(), raw.begin() + std::ptrdiff_t(y * row + 1), raw.begin() + std::ptrdiff_t((y + 1) * row));
    }
    return d;
}

}  // namespace

TEST_CASE("report png: CRC-32 matches its published check value") {
    CHECK(crc32_update(0, bytes_of("123456789")) == 0xCBF43926u);
    CHECK(crc32_update(0, bytes_of("")) == 0u);
    CHECK(crc32_update(crc32_update(0, bytes_of("1234")), bytes_of("56789")) == 0xCBF43926u);
}

TEST_CASE("report png: an image round-trips through zlib and a chunk reader written here") {
    const uint32_t w = 300, h = 250;
    std::vector<uint8_t> rgb(size_t(w) * h * 3);
    for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(i * 7 + i / 3);
    const Decoded d = decode_png(encode_png_rgb(w, h, rgb));
    CHECK(d.width == w);
    CHECK(d.height == h);
    CHECK(d.rgb == rgb);
    CHECK_THROWS_AS(encode_png_rgb(0, 1, rgb), strata::Error);
    CHECK_THROWS_AS(encode_png_rgb(w, h + 1, rgb), strata::Error);
}

TEST_CASE("report png: a plotted line lands on the pixels the frame maps it to") {
    PlotSpec spec;
    spec.width = 400;
    spec.height = 200;
    PlotSeries flat;
    flat.color = {200, 0, 0};
    flat.x = {0, 10, 20, 30};
    flat.y = {5, 5, 5, 5};
    PlotSeries rising;
    rising.color = {0, 0, 200};
    rising.x = {0, 30};
    rising.y = {0, 8};
    spec.series = {flat, rising};
    const RenderedPlot plot = render_line_plot(spec);
    const PlotFrame& f = plot.frame;
    CHECK(f.y_min == 0);  // the axis starts at zero
    CHECK(f.y_max >= 8);
    const int y5 = f.py(5);
    for (int x = f.px(0) + 1; x < f.px(30); ++x) {
        CAPTURE(x);
        const Rgb c = plot.canvas.get(x, y5);
        CHECK((c == Rgb{200, 0, 0} || c == Rgb{0, 0, 200}));  // the rising line crosses it once
    }
    CHECK(plot.canvas.get(f.px(30), f.py(8)) == Rgb{0, 0, 200});
    CHECK(plot.canvas.get(f.left, (f.top + f.bottom) / 2) == Rgb{0, 0, 0});  // y axis
    CHECK(plot.canvas.get(f.left + 5, f.bottom) == Rgb{0, 0, 0});           // x axis

    const Decoded d = decode_png(plot_png(spec));
    REQUIRE(d.width == 400);
    const size_t at = (size_t(y5) * 400 + size_t(f.px(15))) * 3;
    CHECK(d.rgb[at] == 200);
    CHECK(d.rgb[at + 1] == 0);
}

TEST_CASE("report png: tick numbers are drawn with the bitmap font") {
    Canvas c(40, 10);
    const int w = c.text(1, 1, "1.5", Rgb{0, 0, 0});
    CHECK(w == 18);
    // '1' has its stem in column 2 of its 5x7 cell on rows 1..6.
    for (int row = 1; row < 7; ++row) CHECK(c.get(1 + 2, 1 + row) == Rgb{0, 0, 0});
    CHECK(c.get(0, 0) == Rgb{255, 255, 255});
}

TEST_CASE("report png: latency and memory plots from run data") {
    const std::vector<double> times = {0.0, 0.1, 0.25, 0.3, 0.5};
    const PlotSpec latency = token_latency_plot(times);
    REQUIRE(latency.series.size() == 1);
    REQUIRE(latency.series[0].y.size() == 4);
    CHECK(std::abs(latency.series[0].y[1] - 150.0) < 1e-9);
    decode_png(plot_png(latency));

    std::vector<MemorySample> samples(3);
    for (int i = 0; i < 3; ++i) {
        samples[size_t(i)].t_s = i;
        samples[size_t(i)].rss_bytes = uint64_t(i + 1) << 30;
    }
    const PlotSpec mem = memory_plot(samples);
    REQUIRE(mem.series.size() == 1);  // no GPU figures: no GPU line
    CHECK(mem.series[0].y[2] == 3.0);
    const RenderedPlot p = render_line_plot(mem);
    CHECK(p.canvas.get(p.frame.px(2), p.frame.py(3)) == mem.series[0].color);
    // Empty and degenerate data still make a valid picture.
    decode_png(plot_png(PlotSpec{}));
    decode_png(plot_png(token_latency_plot({1.0})));
}

TEST_CASE("report png: nice steps are 1, 2 or 5 times a power of ten") {
    CHECK(nice_step(0, 10, 5) == 2);
    CHECK(nice_step(0, 1, 5) == doctest::Approx(0.2));
    CHECK(nice_step(0, 7, 5) == 2);
    CHECK(nice_step(0, 3000, 8) == 500);
    CHECK(nice_step(0, 0, 5) == 1);
}
