#include "gguf/split_name.hpp"

#include <cstdio>

namespace strata::gguf {
namespace {

std::optional<uint32_t> five_digits(const std::string& s, size_t pos) {
    uint32_t v = 0;
    for (size_t i = pos; i < pos + 5; ++i) {
        if (s[i] < '0' || s[i] > '9') return std::nullopt;
        v = v * 10 + uint32_t(s[i] - '0');
    }
    return v;
}

}  // namespace

std::optional<SplitName> parse_split_name(const std::string& path) {
    static constexpr size_t kTail = 20;  // "-00001-of-00003.gguf"
    if (path.size() < kTail) return std::nullopt;
    const size_t p = path.size() - kTail;
    if (path[p] != '-' || path.compare(p + 6, 4, "-of-") != 0 || path.compare(p + 15, 5, ".gguf") != 0)
        return std::nullopt;
    auto no = five_digits(path, p + 1);
    auto count = five_digits(path, p + 10);
    if (!no || !count || *no == 0 || *count == 0 || *no > *count) return std::nullopt;
    return SplitName{path.substr(0, p), *no, *count};
}

std::string split_file_name(const std::string& prefix, uint32_t number, uint32_t count) {
    char tail[32];
    std::snprintf(tail, sizeof tail, "-%05u-of-%05u.gguf", number, count);
    return prefix + tail;
}

}  // namespace strata::gguf
