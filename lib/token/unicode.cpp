#include "token/unicode.hpp"

#include <algorithm>
#include <array>

namespace strata::token {

namespace {

struct Range {
    uint32_t first, last;
};

// Sorted, non-overlapping. Deliberately coarse: the goal is that common text splits into
// the same words as with a full Unicode database; rare scripts fall through to "other".
constexpr Range kLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xAA, 0xAA},       {0xB5, 0xB5},
    {0xBA, 0xBA},       {0xC0, 0xD6},       {0xD8, 0xF6},       {0xF8, 0x2C1},
    {0x2C6, 0x2D1},     {0x2E0, 0x2E4},     {0x2EC, 0x2EC},     {0x2EE, 0x2EE},
    {0x370, 0x374},     {0x376, 0x377},     {0x37A, 0x37D},     {0x37F, 0x37F},
    {0x386, 0x386},     {0x388, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x560, 0x588},     {0x5D0, 0x5EA},     {0x5EF, 0x5F2},
    {0x620, 0x64A},     {0x66E, 0x66F},     {0x671, 0x6D3},     {0x6D5, 0x6D5},
    {0x6FA, 0x6FC},     {0x904, 0x939},     {0x93D, 0x93D},     {0x950, 0x950},
    {0x958, 0x961},     {0x971, 0x980},     {0x985, 0x9B9},     {0xA05, 0xA39},
    {0xA85, 0xAB9},     {0xB05, 0xB39},     {0xB85, 0xBB9},     {0xC05, 0xC39},
    {0xC85, 0xCB9},     {0xD05, 0xD3A},     {0xE01, 0xE30},     {0xE32, 0xE33},
    {0xE40, 0xE46},     {0x10A0, 0x10FF},   {0x1100, 0x1248},   {0x1E00, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FCC},   {0x1FD0, 0x1FDB},   {0x1FE0, 0x1FEC},
    {0x1FF2, 0x1FFC},   {0x2071, 0x2071},   {0x207F, 0x207F},   {0x2090, 0x209C},
    {0x2C00, 0x2CE4},   {0x3005, 0x3006},   {0x3031, 0x3035},   {0x3041, 0x3096},
    {0x309D, 0x309F},   {0x30A1, 0x30FA},   {0x30FC, 0x30FF},   {0x3105, 0x312F},
    {0x3131, 0x318E},   {0x31A0, 0x31BF},   {0x31F0, 0x31FF},   {0x3400, 0x4DBF},
    {0x4E00, 0x9FFF},   {0xA000, 0xA48C},   {0xA640, 0xA66E},   {0xA722, 0xA788},
    {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFB00, 0xFB06},   {0xFB1D, 0xFB4F},
    {0xFE70, 0xFEFC},   {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0xFF66, 0xFFDC},
    {0x10400, 0x1044F}, {0x20000, 0x2FA1F}, {0x30000, 0x3134A},
};

constexpr Range kNumbers[] = {
    {0x30, 0x39},     {0xB2, 0xB3},     {0xB9, 0xB9},     {0xBC, 0xBE},
    {0x660, 0x669},   {0x6F0, 0x6F9},   {0x966, 0x96F},   {0x9E6, 0x9EF},
    {0xA66, 0xA6F},   {0xAE6, 0xAEF},   {0xB66, 0xB6F},   {0xBE6, 0xBF2},
    {0xC66, 0xC6F},   {0xCE6, 0xCEF},   {0xD66, 0xD78},   {0xE50, 0xE59},
    {0x2070, 0x2070}, {0x2074, 0x2079}, {0x2080, 0x2089}, {0x2150, 0x2189},
    {0x2460, 0x249B}, {0x24EA, 0x24FF}, {0x2776, 0x2793}, {0x3007, 0x3007},
    {0x3021, 0x3029}, {0x3038, 0x303A}, {0x3192, 0x3195}, {0x3220, 0x3229},
    {0x3248, 0x324F}, {0x3251, 0x325F}, {0x3280, 0x3289}, {0x32B1, 0x32BF},
    {0xFF10, 0xFF19},
};

template <size_t N>
bool in_table(const Range (&table)[N], uint32_t cp) {
    auto it = std::upper_bound(std::begin(table), std::end(table), cp,
                               [](uint32_t v, const Range& r) { return v < r.first; });
    return it != std::begin(table) && cp <= std::prev(it)->last;
}

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
    if (len == 1) return {lead < 0x80 ? lead : 0xFFFDu, 1};
    if (pos + len > text.size()) return {0xFFFD, 1};
    uint32_t cp = lead & (0x7Fu >> len);
    for (size_t i = 1; i < len; ++i) {
        if ((byte(pos + i) & 0xC0) != 0x80) return {0xFFFD, 1};
        cp = (cp << 6) | (byte(pos + i) & 0x3Fu);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid sequences.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFD, 1};
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

bool is_letter(uint32_t cp) { return in_table(kLetters, cp); }
bool is_number(uint32_t cp) { return in_table(kNumbers, cp); }

bool is_whitespace(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
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
