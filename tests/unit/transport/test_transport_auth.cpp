// Pre-shared-key authentication: HMAC-SHA256 known answer and challenge/response checks.
#include <doctest/doctest.h>

#include <string>

#include "transport/auth.hpp"

using namespace strata::transport;

namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string hex(const Digest& d) {
    static const char* k = "0123456789abcdef";
    std::string out;
    for (uint8_t b : d) {
        out += k[b >> 4];
        out += k[b & 15];
    }
    return out;
}

}  // namespace

TEST_CASE("transport: HMAC-SHA256 matches RFC 4231 test case 2") {
    const std::string key = "Jefe", data = "what do ya want for nothing?";
    auto mac = hmac_sha256(bytes_of(key), bytes_of(data));
    REQUIRE(mac.ok());
    CHECK(hex(mac.value()) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("transport: the right key answers a challenge; a wrong key, a wrong nonce or a reflected role fail") {
    const std::string key = "pre-shared key", wrong = "pre-shared kez";
    auto nonce = fresh_nonce();
    REQUIRE(nonce.ok());
    auto mac = auth_mac(bytes_of(key), Role::acceptor, nonce.value());
    REQUIRE(mac.ok());
    CHECK(verify_auth(bytes_of(key), Role::acceptor, nonce.value(), mac.value()).ok());

    auto bad_key = auth_mac(bytes_of(wrong), Role::acceptor, nonce.value());
    REQUIRE(bad_key.ok());
    auto refused = verify_auth(bytes_of(key), Role::acceptor, nonce.value(), bad_key.value());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == Errc::auth_failed);

    // The dialer's answer to the same nonce differs: a challenge cannot be bounced back.
    CHECK_FALSE(verify_auth(bytes_of(key), Role::dialer, nonce.value(), mac.value()).ok());

    auto other = nonce.value();
    other[0] ^= 1;
    CHECK_FALSE(verify_auth(bytes_of(key), Role::acceptor, other, mac.value()).ok());
}

TEST_CASE("transport: fresh nonces differ") {
    auto a = fresh_nonce(), b = fresh_nonce();
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a.value() != b.value());
}
