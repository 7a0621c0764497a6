// The library's one exception type. Internal code throws strata::Error; lib/c_api.cpp turns
// it into a strata_status plus the thread-local message at the ABI boundary.
#pragma once

#include <stdexcept>
#include <string>

namespace strata {

// Mirrors strata_status in include/strata/strata.h (checked by static_assert in c_api.cpp).
enum class Status : int {
    ok = 0,
    invalid_argument = 1,  // the caller passed something unusable (null, bad size, bad name)
    io = 2,                // the operating system refused (open, mmap, read, write)
    format = 3,            // a file or frame is malformed
    unsupported = 4,       // well-formed but not supported (version, type, architecture)
    not_found = 5,         // no such key, tensor or file
    buffer_too_small = 6,  // caller buffer too small; the needed size was reported
    out_of_memory = 7,
    internal = 8,          // a bug in strata
    type_mismatch = 9,     // a value exists but has another type
    context_overflow = 10, // the tokens do not fit the configured context
    stage_failed = 11,     // a pipeline stage died, went silent or broke the protocol mid-run
    refused = 12,          // a peer refused the connection: key, model, version or layer range
};

class Error : public std::runtime_error {
public:
    Error(Status status, const std::string& message) : std::runtime_error(message), status_(status) {}
    Status status() const noexcept { return status_; }

private:
    Status status_;
};

[[noreturn]] inline void fail(Status status, const std::string& message) { throw Error(status, message); }

}  // namespace strata
