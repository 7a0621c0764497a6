// Pre-shared-key authentication: each side proves it holds the key by returning
// HMAC-SHA256(key, label || role || nonce) over the nonce the other side chose.
// The role byte keeps a challenge from being reflected back to the side that issued it.
#pragma once

#include <cstdint>
#include <span>

#include "transport/error.hpp"
#include "transport/messages.hpp"

namespace strata::transport {

enum class Role : uint8_t { dialer = 0, acceptor = 1 };

// Plain HMAC-SHA256 (OpenSSL EVP_MAC); exposed for the known-answer test.
Result<Digest> hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> data);

// The MAC that `responder` sends to answer `nonce`.
Result<Digest> auth_mac(std::span<const uint8_t> key, Role responder, const Nonce& nonce);

// Constant-time check of a peer's answer; auth_failed when it does not match.
Status verify_auth(std::span<const uint8_t> key, Role responder, const Nonce& nonce, const Digest& mac);

// 32 bytes from the OS CSPRNG (OpenSSL RAND_bytes).
Result<Nonce> fresh_nonce();

}  // namespace strata::transport
