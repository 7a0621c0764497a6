#include "capi/key.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
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
    std::ifstream in(key_file, std::ios::binary);
    if (!in) fail(Status::io, std::string("cannot open key file ") + key_file + ": " + std::strerror(errno));
    std::vector<uint8_t> bytes;
    char buffer[4096];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        bytes.insert(bytes.end(), buffer, buffer + in.gcount());
        if (bytes.size() > kMaxKeyBytes)
            fail(Status::invalid_argument, std::string("key file ") + key_file + " is larger than 1 MiB");
    }
    if (in.bad()) fail(Status::io, std::string("cannot read key file ") + key_file);
    if (bytes.empty()) fail(Status::invalid_argument, std::string("key file ") + key_file + " is empty");
    return bytes;
}

}  // namespace strata::capi
