#include "transport/error.hpp"

namespace strata::transport {

const char* to_string(Errc code) {
    switch (code) {
    case Errc::bad_magic: return "bad_magic";
    case Errc::unsupported_version: return "unsupported_version";
    case Errc::unsupported_flags: return "unsupported_flags";
    case Errc::oversized_length: return "oversized_length";
    case Errc::checksum_mismatch: return "checksum_mismatch";
    case Errc::truncated: return "truncated";
    case Errc::unknown_type: return "unknown_type";
    case Errc::malformed_payload: return "malformed_payload";
    case Errc::auth_failed: return "auth_failed";
    case Errc::identity_mismatch: return "identity_mismatch";
    case Errc::timed_out: return "timed_out";
    case Errc::closed: return "closed";
    case Errc::io: return "io";
    case Errc::unexpected_message: return "unexpected_message";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::tls_failed: return "tls_failed";
    }
    return "unknown_error";
}

}  // namespace strata::transport
