#include "report/png_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/png_encoder.hpp"

namespace strata::report {

namespace {

constexpr Rgb kAxis{0, 0, 0};
constexpr Rgb kGrid{225, 225, 225};
constexpr int kMarginLeft = 70, kMarginRight = 20, kMarginTop = 20, kMarginBottom = 40;

std::string tick_label(double v, double step) {
    const int decimals = std::clamp(int(-std::floor(std::log10(step) + 1e-9)), 0, 6);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, std::abs(v) < step * 1e-6 ? 0.0 : v);
    return buf;
}

}  // namespace

int PlotFrame::px(double x) const {
    return left + int(std::lround((x - x_min) / (x_max - x_min) * double(right - left)));
}

int PlotFrame::py(double y) const {
    return bottom - int(std::lround((y - y_min) / (y_max - y_min) * double(bottom - top)));
}

double nice_step(double lo, double hi, int target) {
    const double raw = (hi - lo) / std::max(1, target);
    if (!(raw > 0) || !std::isfinite(raw)) return 1;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (raw <= m * mag * (1 + 1e-9)) return m * mag;
    return 10 * mag;
}

RenderedPlot render_line_plot(const PlotSpec& spec) {
    RenderedPlot out{Canvas(std::max(spec.width, kMarginLeft + kMarginRight + 10),
                            std::max(spec.height, kMarginTop + kMarginBottom + 10)),
                     {}};
    PlotFrame& f = out.frame;
    Canvas& c = out.canvas;
    f.left = kMarginLeft;
    f.right = c.width() - 1 - kMarginRight;
    f.top = kMarginTop;
    f.bottom = c.height() - 1 - kMarginBottom;

    // Data bounds over finite points; y from zero.
    double x_lo = INFINITY, x_hi = -INFINITY, y_hi = 0, y_lo = 0;
    for (const PlotSeries& s : spec.series)
        for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
            if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
            x_lo = std::min(x_lo, s.x[i]);
            x_hi = std::max(x_hi, s.x[i]);
            y_lo = std::min(y_lo, s.y[i]);
            y_hi = std::max(y_hi, s.y[i]);
        }
    if (!(x_lo <= x_hi)) x_lo = 0, x_hi = 1;
    if (x_hi == x_lo) x_hi = x_lo + 1;
    if (y_hi == y_lo) y_hi = y_lo + 1;
    const double x_step = nice_step(x_lo, x_hi, 8), y_step = nice_step(y_lo, y_hi, 5);
    f.x_min = x_lo;
    f.x_max = x_hi;
    f.y_min = std::floor(y_lo / y_step) * y_step;
    f.y_max = std::ceil(y_hi / y_step) * y_step;

    // Grid and ticks with their numbers.
    for (double y = f.y_min; y <= f.y_max + y_step * 1e-9; y += y_step) {
        const int py = f.py(y);
        c.line(f.left + 1, py, f.right, py, kGrid);
        c.line(f.left - 5, py, f.left, py, kAxis);
        const std::string label = tick_label(y, y_step);
        c.text(f.left - 8 - Canvas::text_width(label), py - 3, label, kAxis);
    }
    for (double x = std::ceil(x_lo / x_step) * x_step; x <= f.x_max + x_step * 1e-9; x += x_step) {
        const int px = f.px(x);
        c.line(px, f.bottom, px, f.bottom + 5, kAxis);
        const std::string label = tick_label(x, x_step);
        c.text(px - Canvas::text_width(label) / 2, f.bottom + 9, label, kAxis);
    }
    c.line(f.left, f.top, f.left, f.bottom, kAxis);
    c.line(f.left, f.bottom, f.right, f.bottom, kAxis);

    for (const PlotSeries& s : spec.series) {
        bool have_prev = false;
        int prev_x = 0, prev_y = 0;
        for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
            if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
                have_prev = false;  // a gap, not a line across missing data
                continue;
            }
            const int x = f.px(s.x[i]), y = f.py(s.y[i]);
            if (have_prev) c.line(prev_x, prev_y, x, y, s.color);
            else c.set(x, y, s.color);
            prev_x = x;
            prev_y = y;
            have_prev = true;
        }
    }
    return out;
}

std::vector<uint8_t> plot_png(const PlotSpec& spec) {
    const RenderedPlot p = render_line_plot(spec);
    return encode_png_rgb(uint32_t(p.canvas.width()), uint32_t(p.canvas.height()), p.canvas.rgb());
}

PlotSpec token_latency_plot(const std::vector<double>& t) {
    PlotSpec spec;
    PlotSeries s;
    for (size_t i = 1; i < t.size(); ++i) {
        s.x.push_back(double(i));
        s.y.push_back((t[i] - t[i - 1]) * 1e3);
    }
    spec.series.push_back(std::move(s));
    return spec;
}

PlotSpec memory_plot(const std::vector<MemorySample>& samples) {
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    PlotSpec spec;
    PlotSeries rss, gpu;
    rss.color = {31, 119, 180};
    gpu.color = {214, 39, 40};
    bool any_gpu = false;
    for (const MemorySample& m : samples) {
        rss.x.push_back(m.t_s);
        rss.y.push_back(m.rss_bytes ? double(*m.rss_bytes) / kGiB : NAN);
        gpu.x.push_back(m.t_s);
        gpu.y.push_back(m.gpu_used_bytes ? double(*m.gpu_used_bytes) / kGiB : NAN);
        any_gpu = any_gpu || m.gpu_used_bytes.has_value();
    }
    spec.series.push_back(std::move(rss));
    if (any_gpu) spec.series.push_back(std::move(gpu));
    return spec;
}

}  // namespace strata::report
