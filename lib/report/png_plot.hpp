// Line plots for the reports (per-token latency over a run, memory over time) rendered to PNG
// without any graphics library: axes from zero, tick marks at 1-2-5 steps with their numbers in
// the 5x7 font. Axis titles and units are left to the Markdown caption beside the image.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/memory_sampler.hpp"
#include "report/raster.hpp"

namespace strata::report {

struct PlotSeries {
    std::vector<double> x, y;  // same length; non-finite points are skipped
    Rgb color{31, 119, 180};
};

struct PlotSpec {
    int width = 800, height = 400;
    std::vector<PlotSeries> series;
};

// Where data lands on the canvas, so that callers (and tests) can find a value's pixel.
struct PlotFrame {
    int left = 0, top = 0, right = 0, bottom = 0;  // the plot area, inclusive pixel bounds
    double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
    int px(double x) const;
    int py(double y) const;
};

struct RenderedPlot {
    Canvas canvas;
    PlotFrame frame;
};

// The y axis always includes zero (an axis that starts above zero exaggerates changes).
RenderedPlot render_line_plot(const PlotSpec& spec);
std::vector<uint8_t> plot_png(const PlotSpec& spec);

// x: token index (1..n-1), y: milliseconds between consecutive token timestamps (seconds).
PlotSpec token_latency_plot(const std::vector<double>& token_times_s);
// x: seconds; y: GiB. Process RSS (blue) and, where there are GPU figures, GPU memory used (red).
PlotSpec memory_plot(const std::vector<MemorySample>& samples);

// 1-2-5 steps covering [lo, hi] with about `target` intervals.
double nice_step(double lo, double hi, int target);

}  // namespace strata::report
