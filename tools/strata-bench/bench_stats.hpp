// Spread across repeated runs: never one unqualified number. Every summary carries its count,
// min, median, max and sample standard deviation, and the runs it came from stay in the report.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bench {

struct Spread {
    size_t n = 0;
    double min = 0, median = 0, max = 0, stddev = 0;  // stddev: n - 1 in the denominator; 0 for one run
};

inline Spread spread(std::vector<double> v) {
    Spread s;
    v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
    s.n = v.size();
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.min = v.front();
    s.max = v.back();
    s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    double mean = 0;
    for (double x : v) mean += x / double(v.size());
    double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    s.stddev = v.size() > 1 ? std::sqrt(ss / double(v.size() - 1)) : 0;
    return s;
}

inline nlohmann::ordered_json spread_json(const Spread& s) {
    return {{"n", s.n}, {"min", s.min}, {"median", s.median}, {"max", s.max}, {"stddev", s.stddev}};
}

// "median 1234.5 (min 1200.1, max 1300.2, stddev 40.3; 3 runs)", for the Markdown table.
inline std::string spread_text(const Spread& s, int decimals = 1) {
    if (s.n == 0) return "no measured runs";
    auto f = [&](double x) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
        return std::string(buf);
    };
    return "median " + f(s.median) + " (min " + f(s.min) + ", max " + f(s.max) + ", stddev " + f(s.stddev) + "; " +
           std::to_string(s.n) + (s.n == 1 ? " run)" : " runs)");
}

}  // namespace bench
