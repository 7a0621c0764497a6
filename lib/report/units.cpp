#include "report/units.hpp"

#include <charconv>
#include <cstdio>

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

}  // namespace strata::report
