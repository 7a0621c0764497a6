// Errors as values for the transport: a network peer's mistake is data to report, never a
// reason to throw across a coroutine or abort the process. Knows nothing of lib/.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace strata::transport {

enum class Errc {
    bad_magic = 1,
    unsupported_version,
    unsupported_flags,
    oversized_length,
    checksum_mismatch,
    truncated,
    unknown_type,
    malformed_payload,
    auth_failed,
    identity_mismatch,  // peer's protocol version, model identity, layer range or KV set-up differs
    timed_out,          // the deadline passed before the operation completed
    closed,             // the peer closed the connection
    io,                 // any other socket error (detail carries the system message)
    unexpected_message, // a valid frame of a type the protocol does not allow at this point
    invalid_argument,   // a local caller's mistake (an endpoint that does not parse, ...)
    tls_failed,         // TLS refused: handshake or certificate check failed, or a TLS record was bad
};
inline constexpr Errc kLastErrc = Errc::tls_failed;

// Stable, lowercase names, used in logs and error frames.
const char* to_string(Errc code);

struct Error {
    Errc code;
    std::string detail;  // human-readable context: what was expected, what arrived
};

// A value or the Error that prevented it (C++20 has no std::expected).
template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    const Error& error() const { return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;

inline Error make_error(Errc code, std::string detail) { return Error{code, std::move(detail)}; }

}  // namespace strata::transport
