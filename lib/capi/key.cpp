#include "capi/key.hpp"

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <memory>
#include <string>

#include "util/error.hpp"

namespace strata::capi {

std::vector<uint8_t> read_key(const char* key_file, const uint8_t* key, size_t key_length) {
    if (!key_file) {
        if (!key && key_length) fail(Status::invalid_argument, "key is NULL but key_length is " + std::to_string(key_length));
        if (key_length > kMaxKeyBytes)
            fail(Status::invalid_argument, "key_length is " + std::to_string(key_length) + ", at most 1 MiB");
        return key ? std::vector<uint8_t>(key, key + key_length) : std::vector<uint8_t>{};
    }
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(key_file, "rb"), std::fclose);
    if (!f)
        fail(errno == ENOENT ? Status::not_found : Status::io,
             std::string("cannot open key file '") + key_file + "': " + std::strerror(errno));
    // One byte past the limit tells "too large" from "exactly 1 MiB".
    std::vector<uint8_t> bytes(kMaxKeyBytes + 1);
    const size_t n = std::fread(bytes.data(), 1, bytes.size(), f.get());
    if (std::ferror(f.get())) fail(Status::io, std::string("cannot read key file '") + key_file + "'");
    if (n == 0) fail(Status::invalid_argument, std::string("key file '") + key_file + "' is empty");
    if (n > kMaxKeyBytes)
        fail(Status::invalid_argument, std::string("key file '") + key_file + "' is larger than 1 MiB: not a key");
    bytes.resize(n);
    return bytes;
}

}  // namespace strata::capi
