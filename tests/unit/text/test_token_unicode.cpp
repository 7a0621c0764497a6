// Code point classification (Unicode 15.1.0 as llama.cpp 11434 has it), lowercasing, and
// UTF-8 decoding: strict, and llama.cpp's lenient decoding of malformed input.
#include <doctest/doctest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "token/unicode.hpp"

using strata::token::Category;
namespace tok = strata::token;

namespace {

std::vector<uint32_t> lenient(std::string_view bytes) {
    std::vector<uint32_t> cps;
    tok::decode_utf8_lenient(bytes, cps);
    return cps;
}

std::string encoded(std::vector<uint32_t> cps) {
    std::string out;
    tok::encode_utf8(cps, out);
    return out;
}

constexpr uint32_t kBad = 0xFFFD;

}  // namespace

TEST_CASE("hand-picked code points have their Unicode 15.1 general category") {
    const std::pair<uint32_t, Category> cases[] = {
        {'A', Category::Lu},     {'a', Category::Ll},     {0x01C5, Category::Lt},  {0x02B0, Category::Lm},
        {0x4E00, Category::Lo},  {0x0301, Category::Mn},  {0x0903, Category::Mc},  {0x20DD, Category::Me},
        {'7', Category::Nd},     {0x2160, Category::Nl},  {0x00B2, Category::No},  {'_', Category::Pc},
        {'-', Category::Pd},     {'(', Category::Ps},     {')', Category::Pe},     {0x00AB, Category::Pi},
        {0x00BB, Category::Pf},  {'!', Category::Po},     {'+', Category::Sm},     {'$', Category::Sc},
        {'^', Category::Sk},     {0x00A9, Category::So},  {' ', Category::Zs},     {0x2028, Category::Zl},
        {0x2029, Category::Zp},  {0x0007, Category::Cc},  {0x200B, Category::Cf},  {0xD800, Category::Cs},
        {0xE000, Category::Co},  {0x0378, Category::Cn},  {0x10FFFF, Category::Cn}, {0x110000, Category::Cn},
        {0xFFFFFFFF, Category::Cn},
        // New in Unicode 15.0 / 15.1 (unassigned in the 14.0 of Python's own unicodedata).
        {0x31350, Category::Lo}, {0x2EBF0, Category::Lo}, {0x2FFC, Category::So}, {0x1F6DC, Category::So},
    };
    for (const auto& [cp, cat] : cases) {
        CAPTURE(cp);
        CHECK(tok::category_name(tok::category(cp)) == tok::category_name(cat));
    }
}

TEST_CASE("the classes follow the categories for every code point") {
    for (uint32_t cp = 0; cp <= 0x110010; ++cp) {
        const tok::CodePointFlags f = tok::flags(cp);
        const std::string_view name = tok::category_name(f.category());
        const char major = name[0];
        if (f.letter() != (major == 'L') || f.number() != (major == 'N') || f.mark() != (major == 'M') ||
            f.punctuation() != (major == 'P') || f.symbol() != (major == 'S') || f.separator() != (major == 'Z') ||
            f.control() != (major == 'C' && name != "Cn") || f.undefined() != (name == "Cn") ||
            f.has_lowercase() != (tok::to_lower(cp) != cp) || tok::is_letter(cp) != f.letter() ||
            tok::is_number(cp) != f.number() || tok::is_whitespace(cp) != f.whitespace() || tok::is_han(cp) != f.han()) {
            CAPTURE(cp);
            FAIL("flags disagree with category " << name);
        }
    }
}

TEST_CASE("whitespace is llama.cpp's list and Han its ranges") {
    std::vector<uint32_t> spaces;
    for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp)
        if (tok::is_whitespace(cp)) spaces.push_back(cp);
    CHECK(spaces == std::vector<uint32_t>{0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2001,
                                          0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
                                          0x2028, 0x2029, 0x202F, 0x205F, 0x3000});
    std::vector<std::pair<uint32_t, uint32_t>> han;
    for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
        if (!tok::is_han(cp)) continue;
        if (!han.empty() && han.back().second + 1 == cp)
            han.back().second = cp;
        else
            han.push_back({cp, cp});
    }
    CHECK(han == std::vector<std::pair<uint32_t, uint32_t>>{{0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xF900, 0xFAFF},
                                                            {0x20000, 0x2A6DF}, {0x2A700, 0x2EBEF}, {0x2F800, 0x2FA1F}});
}

TEST_CASE("to_lower is the simple lowercase mapping") {
    CHECK(tok::to_lower('A') == 'a');
    CHECK(tok::to_lower('a') == 'a');
    CHECK(tok::to_lower('1') == '1');
    CHECK(tok::to_lower(0x00C0) == 0x00E0);
    CHECK(tok::to_lower(0x0130) == 'i');     // full lowercase would be two code points
    CHECK(tok::to_lower(0x212A) == 'k');     // KELVIN SIGN
    CHECK(tok::to_lower(0x03A3) == 0x03C3);  // Σ -> σ (no final-sigma context)
    CHECK(tok::to_lower(0x0100) == 0x0101);  // Latin Extended-A alternates case
    CHECK(tok::to_lower(0x0101) == 0x0101);
    CHECK(tok::to_lower(0x0410) == 0x0430);
    CHECK(tok::to_lower(0x0400) == 0x0450);
    CHECK(tok::to_lower(0x01C5) == 0x01C6);  // titlecase ǅ -> ǆ
    CHECK(tok::to_lower(0x00DF) == 0x00DF);
    CHECK(tok::to_lower(0x10400) == 0x10428);
    CHECK(tok::to_lower(0x1E900) == 0x1E922);
    CHECK(tok::to_lower(0x110000) == 0x110000);
    size_t mapped = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) mapped += tok::to_lower(cp) != cp;
    CHECK(mapped == 1433);  // UnicodeData.txt 15.1.0 entries with a simple lowercase mapping
}

TEST_CASE("the generated tables agree with unicodedata2 15.1.0 on a random sample") {
    // Written by tools/codegen/gen_unicode_tables.py --sample from the Unicode database itself.
    std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/tests/data/unicode_sample_15_1.csv");
    REQUIRE(in);
    std::string line;
    size_t checked = 0;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#' || line.rfind("code_point", 0) == 0) continue;
        std::istringstream fields(line);
        std::string cp_hex, cat, lower_hex, ws, han;
        std::getline(fields, cp_hex, ',');
        std::getline(fields, cat, ',');
        std::getline(fields, lower_hex, ',');
        std::getline(fields, ws, ',');
        std::getline(fields, han, ',');
        const uint32_t cp = uint32_t(std::stoul(cp_hex, nullptr, 16));
        CAPTURE(line);
        CHECK(tok::category_name(tok::category(cp)) == cat);
        CHECK(tok::to_lower(cp) == uint32_t(std::stoul(lower_hex, nullptr, 16)));
        CHECK(tok::is_whitespace(cp) == (ws == "1"));
        CHECK(tok::is_han(cp) == (han == "1"));
        ++checked;
    }
    CHECK(checked > 3000);
}

TEST_CASE("lenient decoding follows llama.cpp on every malformed shape") {
    CHECK(lenient("a\x7f") == std::vector<uint32_t>{'a', 0x7F});
    CHECK(lenient("\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80") == std::vector<uint32_t>{0xE9, 0x4E2D, 0x1F600});
    // No overlong or surrogate checks.
    CHECK(lenient("\xc0\x80") == std::vector<uint32_t>{0});
    CHECK(lenient("\xc1\xbf") == std::vector<uint32_t>{0x7F});
    CHECK(lenient("\xe0\x80\xaf") == std::vector<uint32_t>{0x2F});
    CHECK(lenient("\xed\xa0\x80") == std::vector<uint32_t>{0xD800});
    // F4 90.. and F5-F7 leads decode past U+10FFFF.
    CHECK(lenient("\xf4\x90\x80\x80") == std::vector<uint32_t>{0x110000});
    CHECK(lenient("\xf5\x80\x80\x80") == std::vector<uint32_t>{0x140000});
    CHECK(lenient("\xf7\xbf\xbf\xbf") == std::vector<uint32_t>{0x1FFFFF});
    // A byte that cannot start a sequence becomes U+FFFD and is consumed alone.
    CHECK(lenient("\x80") == std::vector<uint32_t>{kBad});
    CHECK(lenient("a\xbfz") == std::vector<uint32_t>{'a', kBad, 'z'});
    CHECK(lenient("\xf8\x88\x80\x80\x80") == std::vector<uint32_t>{kBad, kBad, kBad, kBad, kBad});
    CHECK(lenient("\xff\xfe") == std::vector<uint32_t>{kBad, kBad});
    // A sequence cut short, or with a byte that is not a continuation: the lead alone is
    // U+FFFD and decoding resumes at the next byte.
    CHECK(lenient("\xc3") == std::vector<uint32_t>{kBad});
    CHECK(lenient("\xe4\xb8") == std::vector<uint32_t>{kBad, kBad});
    CHECK(lenient("\xf0\x9f\x98") == std::vector<uint32_t>{kBad, kBad, kBad});
    CHECK(lenient("\xc3(") == std::vector<uint32_t>{kBad, '('});
    CHECK(lenient("\xe4\xb8z") == std::vector<uint32_t>{kBad, kBad, 'z'});
    CHECK(lenient("\xf0\x9f\x98\xc3\xa9") == std::vector<uint32_t>{kBad, kBad, kBad, 0xE9});
    CHECK(lenient("\xe4\xc3\xa9") == std::vector<uint32_t>{kBad, 0xE9});
    CHECK(lenient("") == std::vector<uint32_t>{});
    // Appends.
    std::vector<uint32_t> out = {1};
    tok::decode_utf8_lenient("b", out);
    CHECK(out == std::vector<uint32_t>{1, 'b'});
}

TEST_CASE("strict decoding refuses overlong forms, surrogates and values past U+10FFFF") {
    const auto one = [](std::string_view s) { return tok::decode_utf8(s, 0); };
    CHECK(one("\xc3\xa9").cp == 0xE9);
    CHECK(one("\xc3\xa9").len == 2);
    for (std::string_view bad : {"\xc0\x80", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80", "\xe4\xb8"}) {
        CAPTURE(bad);
        CHECK(one(bad).cp == kBad);
        CHECK(one(bad).len == 1);
    }
}

TEST_CASE("encode_utf8 writes code points back, with U+FFFD past U+10FFFF") {
    CHECK(encoded({'a', 0xE9, 0x4E2D, 0x1F600}) == "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
    CHECK(encoded({0x110000, 0x1FFFFF, 'x'}) == "\xef\xbf\xbd\xef\xbf\xbd" "x");
    CHECK(encoded({0xD800}) == "\xed\xa0\x80");  // as llama.cpp re-encodes a decoded surrogate
    // Invalid input comes back with EF BF BD where llama.cpp's BPE words have it.
    CHECK(encoded(lenient("a\xff\xe4\xb8")) == "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 200; ++round) {  // valid text round-trips
        std::vector<uint32_t> cps(rng() % 50);
        for (uint32_t& cp : cps) {
            do cp = uint32_t(rng() % 0x110000);
            while (cp >= 0xD800 && cp <= 0xDFFF);
        }
        CHECK(lenient(encoded(cps)) == cps);
    }
}

TEST_CASE("GPT-2's byte characters map back to their bytes") {
    for (int b = 0; b < 256; ++b) CHECK(tok::char_to_byte(tok::byte_to_char(uint8_t(b))) == b);
    CHECK(tok::byte_to_char(' ') == 0x120);
    CHECK(tok::byte_to_char('A') == 'A');
    CHECK(tok::char_to_byte(0x4E00) == -1);
}
