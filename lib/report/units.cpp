#include "report/units.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace strata::report {

std::string iec_bytes(uint64_t bytes) {
    static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int unit = 0;
    double value = double(bytes);
    while (value >= 1024.0 && unit < 6) {
        value /= 1024.0;
        ++unit;
    }
    if (unit == 0) return std::to_string(bytes) + " B";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f %s", value, kUnits[unit]);
    return buf;
}

std::string iec_bytes_exact(uint64_t bytes) {
    if (bytes < 1024) return std::to_string(bytes) + " B";
    return iec_bytes(bytes) + " (" + std::to_string(bytes) + " B)";
}

std::string format_number(double value) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, value);
    return std::string(buf, r.ptr);
}

std::string format_significant(double value, int significant) {
    significant = std::clamp(significant, 1, 15);
    if (!std::isfinite(value)) return format_number(value);
    // Decimals for the significant digits, never negative (1234.6 reads "1235", not "1.23e+03");
    // below 1 the digits continue after the point ("0.00123").
    const int int_digits = value != 0 ? int(std::floor(std::log10(std::fabs(value)))) + 1 : 1;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", std::clamp(significant - int_digits, 0, 30), value);
    std::string text = buf;
    if (text.find('.') != std::string::npos) {
        while (text.back() == '0') text.pop_back();
        if (text.back() == '.') text.pop_back();
    }
    if (text == "-0") text = "0";
    return text;
}

std::string format_duration(double seconds, int significant) {
    significant = std::clamp(significant, 1, 15);
    if (!std::isfinite(seconds)) return format_number(seconds) + " s";
    // Below a second, round to the significant digits before choosing the unit, so that 0.9996 s
    // reads "1 s", not "1000 ms". From a second up no integer digit is ever dropped.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*e", significant - 1, seconds);
    const double rounded = std::fabs(seconds) < 1 ? std::strtod(buf, nullptr) : seconds;
    const double magnitude = std::fabs(rounded);
    const char* unit = "s";
    double value = rounded;
    if (magnitude > 0 && magnitude < 1e-3) {
        value = rounded * 1e6;
        unit = "µs";
    } else if (magnitude > 0 && magnitude < 1) {
        value = rounded * 1e3;
        unit = "ms";
    }
    return format_significant(value, significant) + " " + unit;
}

}  // namespace strata::report
