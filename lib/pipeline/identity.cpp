#include "pipeline/identity.hpp"

#include "util/error.hpp"

namespace strata::pipeline {

transport::Digest parse_identity(const std::string& hex) {
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    transport::Digest d{};
    if (hex.size() != 2 * d.size())
        fail(Status::invalid_argument, "model identity must be 64 hex characters, got " + std::to_string(hex.size()));
    for (size_t i = 0; i < d.size(); ++i) {
        const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) fail(Status::invalid_argument, "model identity holds a character that is not hex");
        d[i] = uint8_t(hi << 4 | lo);
    }
    return d;
}

}  // namespace strata::pipeline
