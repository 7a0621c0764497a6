#include "token/unicode.hpp"

#include <algorithm>
#include <array>

namespace strata::token {

namespace {

struct LowercaseRun {
    uint32_t first, last;
    int32_t delta;
    uint32_t stride;
};

#include "token/unicode_data.inc"

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kReplacement = 0xFFFD;
static_assert(sizeof(kPropertyBlock) / sizeof(kPropertyBlock[0]) * kPropertyBlockSize == kMaxCodePoint + 1);

constexpr std::string_view kCategoryNames[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd",
                                               "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm",
                                               "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};

struct ByteMap {
    std::array<uint32_t, 256> to_char{};
    ByteMap() {
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            to_char[size_t(b)] = printable ? uint32_t(b) : next++;
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

size_t utf8_sequence_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if ((lead & 0xE0) == 0xC0) return 2;
    if ((lead & 0xF0) == 0xE0) return 3;
    if ((lead & 0xF8) == 0xF0) return 4;
    return 1;
}

CodePoint decode_utf8(std::string_view text, size_t pos) {
    const auto byte = [&](size_t i) { return uint8_t(text[i]); };
    const uint8_t lead = byte(pos);
    const size_t len = utf8_sequence_length(lead);
    if (len == 1) return {lead < 0x80 ? lead : kReplacement, 1};
    if (pos + len > text.size()) return {kReplacement, 1};
    uint32_t cp = lead & (0x7Fu >> len);
    for (size_t i = 1; i < len; ++i) {
        if (!is_continuation(byte(pos + i))) return {kReplacement, 1};
        cp = (cp << 6) | (byte(pos + i) & 0x3Fu);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid sequences.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return {kReplacement, 1};
    return {cp, len};
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

void decode_utf8_lenient(std::string_view text, std::vector<uint32_t>& out) {
    out.reserve(out.size() + text.size());
    const size_t n = text.size();
    size_t pos = 0;
    while (pos < n) {
        const uint8_t lead = uint8_t(text[pos]);
        if (lead < 0x80) {
            out.push_back(lead);
            ++pos;
            continue;
        }
        // 80-BF cannot start a sequence; F8-FF announce no length llama.cpp knows.
        const size_t len = lead < 0xC0 ? 0 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : lead < 0xF8 ? 4 : 0;
        bool ok = len != 0 && pos + len <= n;
        uint32_t cp = lead & (0x7Fu >> len);
        for (size_t i = 1; ok && i < len; ++i) {
            const uint8_t next = uint8_t(text[pos + i]);
            ok = is_continuation(next);
            cp = (cp << 6) | (next & 0x3Fu);
        }
        if (ok) {
            out.push_back(cp);
            pos += len;
        } else {
            out.push_back(kReplacement);
            ++pos;
        }
    }
}

void encode_utf8(std::span<const uint32_t> cps, std::string& out) {
    out.reserve(out.size() + cps.size());
    for (uint32_t cp : cps) {
        if (cp < 0x80) {
            out += char(cp);
        } else {
            append_utf8(out, cp <= kMaxCodePoint ? cp : kReplacement);
        }
    }
}

std::string_view category_name(Category category) {
    const size_t i = size_t(category);
    return i < std::size(kCategoryNames) ? kCategoryNames[i] : std::string_view("??");
}

CodePointFlags flags(uint32_t cp) {
    if (cp > kMaxCodePoint) return CodePointFlags{};
    const uint32_t block = kPropertyBlock[cp / kPropertyBlockSize];
    return CodePointFlags{kPropertyBytes[block * kPropertyBlockSize + cp % kPropertyBlockSize]};
}

Category category(uint32_t cp) { return flags(cp).category(); }

bool is_letter(uint32_t cp) { return flags(cp).letter(); }
bool is_number(uint32_t cp) { return flags(cp).number(); }
bool is_mark(uint32_t cp) { return flags(cp).mark(); }
bool is_punctuation(uint32_t cp) { return flags(cp).punctuation(); }
bool is_symbol(uint32_t cp) { return flags(cp).symbol(); }
bool is_separator(uint32_t cp) { return flags(cp).separator(); }
bool is_control(uint32_t cp) { return flags(cp).control(); }
bool is_whitespace(uint32_t cp) { return flags(cp).whitespace(); }
bool is_han(uint32_t cp) { return flags(cp).han(); }

uint32_t to_lower(uint32_t cp) {
    if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    if (!flags(cp).has_lowercase()) return cp;
    const auto it = std::upper_bound(std::begin(kLowercaseRuns), std::end(kLowercaseRuns), cp,
                                     [](uint32_t v, const LowercaseRun& r) { return v < r.first; });
    if (it == std::begin(kLowercaseRuns)) return cp;
    const LowercaseRun& run = *std::prev(it);
    if (cp > run.last || (cp - run.first) % run.stride != 0) return cp;
    return uint32_t(int32_t(cp) + run.delta);
}

uint32_t byte_to_char(uint8_t byte) { return byte_map().to_char[byte]; }

int char_to_byte(uint32_t cp) {
    if (cp < 256) return byte_map().to_char[cp] == cp ? int(cp) : -1;
    if (cp < 256 + 68) {  // the 68 remapped bytes, in byte order
        for (int b = 0; b < 256; ++b)
            if (byte_map().to_char[size_t(b)] == cp) return b;
    }
    return -1;
}

}  // namespace strata::token
