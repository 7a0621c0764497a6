// Units for the readable rendering: bytes stay bytes in JSON; Markdown shows IEC units with the
// exact byte count beside them, so a reader never has to guess whether "GB" meant 10^9 or 2^30.
#pragma once

#include <cstdint>
#include <string>

namespace strata::report {

// "1.50 GiB", "512 KiB", "17 B": the largest IEC unit with a value >= 1, two decimals above B.
std::string iec_bytes(uint64_t bytes);

// "1.50 GiB (1610612736 B)": the IEC value with the exact count it came from.
std::string iec_bytes_exact(uint64_t bytes);

// Shortest decimal that reads back as the same double ("600", "0.25", "1e-07").
std::string format_number(double value);

}  // namespace strata::report
