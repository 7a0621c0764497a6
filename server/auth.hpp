// auth.hpp: the API key every request but GET /health must present.
#pragma once

#include <string>
#include <string_view>

namespace server {

class ApiKeyCheck {
public:
    explicit ApiKeyCheck(std::string key) : key_(std::move(key)) {}
    bool required() const { return !key_.empty(); }
    // True when no key is configured or the Authorization header is "Bearer KEY" (compared in
    // time independent of where the texts differ, so the key cannot be guessed byte by byte).
    bool accepts(std::string_view authorization_header) const;

private:
    std::string key_;
};

}  // namespace server
