#include "transport/auth.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <memory>
#include <string_view>
#include <vector>

namespace strata::transport {
namespace {

constexpr std::string_view kLabel = "strata-auth-v1";

struct MacDeleter {
    void operator()(EVP_MAC* m) const { EVP_MAC_free(m); }
    void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
};

}  // namespace

Result<Digest> hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> data) {
    std::unique_ptr<EVP_MAC, MacDeleter> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
    if (!mac) return make_error(Errc::auth_failed, "OpenSSL has no HMAC");
    std::unique_ptr<EVP_MAC_CTX, MacDeleter> ctx(EVP_MAC_CTX_new(mac.get()));
    char digest_name[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
                           OSSL_PARAM_construct_end()};
    Digest out{};
    size_t out_len = 0;
    // An empty key is passed as a one-byte buffer of length zero: OpenSSL refuses a null key.
    static const uint8_t kNoKey = 0;
    if (!ctx || EVP_MAC_init(ctx.get(), key.empty() ? &kNoKey : key.data(), key.size(), params) != 1 ||
        EVP_MAC_update(ctx.get(), data.data(), data.size()) != 1 ||
        EVP_MAC_final(ctx.get(), out.data(), &out_len, out.size()) != 1 || out_len != out.size())
        return make_error(Errc::auth_failed, "OpenSSL HMAC-SHA256 failed");
    return out;
}

Result<Digest> auth_mac(std::span<const uint8_t> key, Role responder, const Nonce& nonce) {
    std::vector<uint8_t> msg(kLabel.begin(), kLabel.end());
    msg.push_back(uint8_t(responder));
    msg.insert(msg.end(), nonce.begin(), nonce.end());
    return hmac_sha256(key, msg);
}

Status verify_auth(std::span<const uint8_t> key, Role responder, const Nonce& nonce, const Digest& mac) {
    auto expect = auth_mac(key, responder, nonce);
    if (!expect) return expect.error();
    if (CRYPTO_memcmp(expect.value().data(), mac.data(), mac.size()) != 0)
        return make_error(Errc::auth_failed, "peer's answer to the challenge does not match the pre-shared key");
    return Ok{};
}

Result<Nonce> fresh_nonce() {
    Nonce n{};
    if (RAND_bytes(n.data(), int(n.size())) != 1) return make_error(Errc::auth_failed, "RAND_bytes failed");
    return n;
}

}  // namespace strata::transport
