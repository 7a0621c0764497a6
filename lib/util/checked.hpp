// Overflow-checked arithmetic for sizes and offsets read from untrusted input.
#pragma once

#include <cstdint>
#include <optional>

namespace strata::util {

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}

// Rounds up to a multiple of a power-of-two alignment; nullopt on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t value, uint64_t alignment) {
    auto r = checked_add(value, alignment - 1);
    if (!r) return std::nullopt;
    return *r & ~(alignment - 1);
}

}  // namespace strata::util
