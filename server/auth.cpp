// auth.cpp: Bearer-key comparison.
#include "auth.hpp"

#include <algorithm>
#include <cctype>

namespace server {

bool ApiKeyCheck::accepts(std::string_view header) const {
    if (key_.empty()) return true;
    constexpr std::string_view scheme = "bearer ";
    if (header.size() < scheme.size()) return false;
    for (size_t i = 0; i < scheme.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(header[i])) != scheme[i]) return false;
    std::string_view given = header.substr(scheme.size());
    while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
    while (!given.empty() && given.back() == ' ') given.remove_suffix(1);
    // Every byte of the longer text is looked at whatever the content.
    unsigned diff = given.size() == key_.size() ? 0u : 1u;
    const size_t n = std::max(given.size(), key_.size());
    for (size_t i = 0; i < n; ++i) {
        unsigned char a = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
        unsigned char b = i < key_.size() ? static_cast<unsigned char>(key_[i]) : 0;
        diff |= unsigned(a ^ b);
    }
    return diff == 0;
}

}  // namespace server
