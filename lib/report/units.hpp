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

// `value` with `significant` digits for reading, trailing zeros dropped, never in exponent form and
// never dropping a digit left of the point: 0.000123 -> "0.000123", 2.5 -> "2.5", 1234.6 -> "1235".
std::string format_significant(double value, int significant = 3);

// A duration for reading: seconds scaled to µs, ms or s (whichever keeps the value >= 1 where it
// can) with `significant` digits and trailing zeros dropped: "123 µs", "12.3 ms", "1.5 s",
// "1800 s" (digits left of the point are never dropped). Measurements use 3 digits; configured
// limits more, so that a limit reads as what was set. Not for JSON: JSON keeps the full value.
std::string format_duration(double seconds, int significant = 3);

}  // namespace strata::report
