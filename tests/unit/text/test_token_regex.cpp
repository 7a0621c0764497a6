// The regex engine of the pre-tokenizers (token/regex.hpp): hand-worked matches and splits,
// llama.cpp's pattern lists (expected pieces worked out by hand and checked against an
// independent ECMAScript engine, V8), std::regex_iterator's stepping over empty matches,
// errors for malformed and unsupported patterns, and time linear in the text.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "token/regex.hpp"
#include "token/unicode.hpp"
#include "util/error.hpp"

using strata::Status;
using strata::token::Regex;

namespace {

using Pieces = std::vector<std::string>;

std::vector<uint32_t> code_points(std::string_view text) {
    std::vector<uint32_t> cps;
    strata::token::decode_utf8_lenient(text, cps);
    return cps;
}

// Splits text by each pattern in turn, as llama.cpp's unicode_regex_split does.
Pieces split_all(const std::vector<std::string>& patterns, std::string_view text) {
    const auto cps = code_points(text);
    std::vector<size_t> offsets = {cps.size()};
    for (const std::string& p : patterns) offsets = strata::token::regex_split(Regex::compile(p), cps, offsets);
    Pieces out;
    size_t begin = 0;
    for (size_t len : offsets) {
        std::string piece;
        strata::token::encode_utf8(std::span(cps).subspan(begin, len), piece);
        out.push_back(piece);
        begin += len;
    }
    return out;
}

Pieces split(const std::string& pattern, std::string_view text) { return split_all({pattern}, text); }

std::vector<size_t> lengths(const std::string& pattern, std::string_view text, std::vector<size_t> offsets = {}) {
    const auto cps = code_points(text);
    if (offsets.empty()) offsets = {cps.size()};
    return strata::token::regex_split(Regex::compile(pattern), cps, offsets);
}

// "begin+length" of the first match at or after from, or "none".
std::string first_match(const std::string& pattern, std::string_view text, size_t from = 0) {
    const auto m = Regex::compile(pattern).search(code_points(text), from);
    return m ? std::to_string(m->begin) + "+" + std::to_string(m->length) : "none";
}

void check_refused(const std::string& pattern, Status status, const std::string& needle) {
    CAPTURE(pattern);
    try {
        (void)Regex::compile(pattern);
        FAIL("compiled; expected an error mentioning " << needle);
    } catch (const strata::Error& e) {
        const std::string message = e.what();
        CAPTURE(message);
        CHECK(e.status() == status);
        CHECK(message.find(needle) != std::string::npos);
    }
}

// llama.cpp 11434's regex_exprs (src/llama-vocab.cpp) of some pre-tokenizer types.
const std::map<std::string, std::vector<std::string>> kPresets = {
    {"deepseek-v3", {"\\p{N}{1,3}",
        "[一-龥぀-ゟ゠-ヿ]+",
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}},
    {"deepseek-llm", {"[\r\n]",
        "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
        "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
        "\\s+$",
        "[一-龥ࠀ-一가-퟿]+",
        "\\p{N}+"}},
    {"deepseek-coder", {"[\r\n]",
        "\\s?\\p{L}+",
        "\\s?\\p{P}+",
        "[一-龥ࠀ-一가-퟿]+",
        "\\p{N}"}},
    {"falcon", {"[\\p{P}\\$\\+<=>\\^~\\|`]+",
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
        "[0-9][0-9][0-9]"}},
    {"default", {"[\\p{P}\\$\\+<=>\\^~\\|]+",
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
        "\\p{N}+",
        "[0-9][0-9][0-9]"}},
    {"starcoder", {"\\p{N}",
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}},
};

const char* const kTexts[] = {
    "Hello world! It's 2024: we've got 12345 apples.\n\n  Indented\tline   \r\nend",
    "中文测试，日本語テキスト한국어 ЁЖ Привет 😀👍 µÀé (x+y)^2=z; a_b-c",
    "  spaces   ",
};

Pieces pieces(const std::string& preset, int text) { return split_all(kPresets.at(preset), kTexts[text]); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("literals, classes and escapes match the code points they name") {
    CHECK(first_match("b", "abc") == "1+1");
    CHECK(first_match("é", "cafés") == "3+1");
    CHECK(first_match("[a-c]+", "xxbcaz") == "2+3");
    CHECK(first_match("[^a-c]", "abcd") == "3+1");
    CHECK(first_match("[α-ω]+", "abγδε") == "2+3");
    CHECK(first_match("\\r\\n\\t\\f\\v", "x\r\n\t\f\v") == "1+5");
    CHECK(first_match("\\0", std::string_view("a\0", 2)) == "1+1");
    CHECK(first_match("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\\\^\\$\\/", "a.*+?()[]{}|\\^$/") == "1+15");
    CHECK(first_match("\\x41\\u00e9\\u{1F600}", "zAé😀") == "1+3");
    CHECK(first_match("[\\-\\]]+", "a-]-b") == "1+3");
    CHECK(first_match("[\\b]", "a\bb") == "1+1");  // backspace inside a class
    CHECK(first_match("[a-]+", "x-a-") == "1+3");
    CHECK(first_match("[]", "abc") == "none");     // ECMAScript: the empty class
    CHECK(first_match("[^]", "\n") == "0+1");      // and everything
    CHECK(first_match(".", "\n\r\u2028\u2029x") == "4+1");
    CHECK(first_match("\\d+", "x٣42") == "2+2");  // \d is ASCII
    CHECK(first_match("\\w+", "é_a1!") == "1+3");
    CHECK(first_match("\\W", "ab_é") == "3+1");
    CHECK(first_match("\\D\\S", "12 x3") == "2+2");
}

TEST_CASE("\\s is llama.cpp's whitespace list, \\p classes are Unicode 15.1 categories") {
    CHECK(first_match("\\s+", "a\t\n\v\f\r \u0085\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000b") == "1+16");
    CHECK(first_match("\\s", "\u200b\ufeff\u180e") == "none");  // not in the list
    CHECK(first_match("\\p{L}+", "12Ωя中ǅ") == "2+4");
    CHECK(first_match("\\p{Lu}", "aǅΩ") == "2+1");
    CHECK(first_match("\\p{Lt}", "AǅΩ") == "1+1");
    CHECK(first_match("\\p{Ll}+", "ABcdé") == "2+3");
    CHECK(first_match("\\p{Lm}", "aʰ") == "1+1");
    CHECK(first_match("\\p{Lo}", "aʰ中") == "2+1");
    CHECK(first_match("\\p{N}+", "x²3Ⅻ٣") == "1+4");
    CHECK(first_match("\\p{Nd}+", "x²3Ⅻ٣") == "2+1");
    CHECK(first_match("\\p{M}", "e\u0301") == "1+1");
    CHECK(first_match("\\p{P}+", "a!¿«»-_b") == "1+6");
    CHECK(first_match("\\p{S}+", "a+$^©€b") == "1+5");
    CHECK(first_match("\\p{Z}+", "a \u00a0\u2028b") == "1+3");
    CHECK(first_match("\\p{C}", "ab\u200bc") == "2+1");  // Cf
    CHECK(first_match("\\p{Cn}", "a\u0378") == "1+1");
    CHECK(first_match("\\p{Co}", "a\ue000") == "1+1");
    CHECK(first_match("\\p{Han}+", "a中文\u3005b") == "1+2");  // llama.cpp's ranges: not U+3005
    CHECK(first_match("\\P{L}+", "ab12!c") == "2+3");
    CHECK(first_match("[^\\p{L}\\p{N}]+", "ab12 !?c") == "4+3");
    CHECK(first_match("[\\p{Lu}\\p{Nd}]+", "abC1Dé") == "2+3");
    CHECK(first_match("\\pL+", "12ab") == "2+2");
    CHECK(first_match("[\\s\\d]+", "ab 1\t2c") == "2+4");
    CHECK(first_match("[^\\S\\n]+", "a \t\nb") == "1+2");
}

TEST_CASE("alternatives are tried in order and quantifiers are greedy or lazy") {
    CHECK(first_match("a|ab", "ab") == "0+1");  // leftmost-first, not longest
    CHECK(first_match("ab|a", "ab") == "0+2");
    CHECK(first_match("a*", "aaab") == "0+3");
    CHECK(first_match("a*?", "aaab") == "0+0");
    CHECK(first_match("a+?", "aaab") == "0+1");
    CHECK(first_match("a??b", "ab") == "0+2");
    CHECK(first_match("a{2}", "aaaa") == "0+2");
    CHECK(first_match("a{2,}", "aaaa") == "0+4");
    CHECK(first_match("a{2,3}", "aaaa") == "0+3");
    CHECK(first_match("a{2,3}?", "aaaa") == "0+2");
    CHECK(first_match("a{3}", "aab") == "none");
    CHECK(first_match("(?:ab)+", "ababa") == "0+4");
    CHECK(first_match("(ab|a)(bc)?", "abc") == "0+2");
    CHECK(first_match("x(?:a|b)*?c", "xababc") == "0+6");
    CHECK(first_match("\\p{N}{1,3}", "12345") == "0+3");
    // ECMAScript refuses a loop iteration that consumes nothing: the empty alternative
    // does not end the loop early (std::regex of libstdc++ differs here).
    CHECK(first_match("(?:|a)*", "aa") == "0+2");
    CHECK(first_match("(?:|a)?b", "ab") == "0+2");
    CHECK(first_match("(?:(?=a)|a){2,}", "aab") == "0+2");
}

TEST_CASE("(?i:...) compares through the simple lowercase mapping") {
    CHECK(first_match("(?i:'s|'ll)", "x'S 'LL") == "1+2");
    CHECK(first_match("(?i:abc)", "xAbC") == "1+3");
    CHECK(first_match("(?i:[a-c]+)", "xABCd") == "1+3");
    CHECK(first_match("(?i:σ)", "Σ") == "0+1");
    CHECK(first_match("(?i:k)", "\u212a") == "0+1");  // KELVIN SIGN lowercases to k
    CHECK(first_match("(?i:[^a])", "Aab") == "2+1");
    CHECK(first_match("(?i:a)b", "AB") == "none");  // the flag ends with the group
}

TEST_CASE("anchors, word boundaries and lookaheads see only the segment") {
    CHECK(first_match("^a", "aa", 1) == "none");
    CHECK(first_match("a$", "aa") == "1+1");
    CHECK(first_match("\\s+$", "a  b  ") == "4+2");
    CHECK(first_match("\\bfoo\\b", "afoo foo") == "5+3");
    CHECK(first_match("\\Boo", "foo") == "1+2");
    CHECK(first_match("\\s+(?!\\S)", "a   b") == "1+2");
    CHECK(first_match("a(?=b)", "acab") == "2+1");
    CHECK(first_match("a(?!b)", "abac") == "2+1");
    CHECK(first_match("(?=(\\d{3})+(?!\\d))", "12345") == "2+0");
    CHECK(first_match("\\d{1,3}(?=(?:\\d{3})*\\b)", "1234567") == "0+1");
    CHECK(first_match("(?=a(?=b))a", "aab") == "1+1");
    // Segments end the text for '$' and for lookaheads.
    CHECK(lengths("\\s+$", "a  b  ", {3, 3}) == std::vector<size_t>{1, 2, 1, 2});
    CHECK(lengths("a(?!b)", "abab", {1, 3}) == std::vector<size_t>{1, 3});
}

TEST_CASE("regex_split steps over matches as std::regex_iterator and llama.cpp do") {
    CHECK(split("\\s+", "a  b c") == Pieces{"a", "  ", "b", " ", "c"});
    CHECK(split("x", "abc") == Pieces{"abc"});
    CHECK(split("\\p{N}{1,3}", "1234567") == Pieces{"123", "456", "7"});
    // An empty match is a 0-length segment; the next search must not be empty at the same place.
    CHECK(lengths("a*", "baab") == std::vector<size_t>{0, 1, 2, 0, 1, 0});
    CHECK(lengths("a*?", "aa") == std::vector<size_t>{0, 1, 0, 1, 0});
    CHECK(lengths("(?=b)|b", "ab") == std::vector<size_t>{1, 0, 1});
    CHECK(lengths("x*", "") == std::vector<size_t>{0});
    CHECK(lengths("x", "") == std::vector<size_t>{});
    // Each segment is split alone; a match never crosses a segment's end.
    CHECK(lengths("ab", "abab", {1, 3}) == std::vector<size_t>{1, 1, 2});
    CHECK(lengths("\\s+", "a  b", {2, 0, 2}) == std::vector<size_t>{1, 1, 1, 1});
}

TEST_CASE("llama.cpp's pattern lists split sample texts as an ECMAScript engine does") {
    CHECK(pieces("deepseek-v3", 0) == Pieces{"Hello", " world", "!", " It", "'s", " ", "202", "4", ":", " we", "'ve", " got", " ", "123", "45", " apples", ".\n\n", " ", " Indented", "\tline", "   \r\n", "end"});
    CHECK(pieces("deepseek-v3", 1) == Pieces{"中文测试", "，", "日本語テキスト", "한국어", " ЁЖ", " Привет", " 😀👍", " µÀé", " (", "x", "+y", ")^", "2", "=z", ";", " a", "_b", "-c"});
    CHECK(pieces("deepseek-v3", 2) == Pieces{" ", " spaces", "   "});
    CHECK(pieces("deepseek-llm", 0) == Pieces{"Hello", " world", "!", " It", "'", "s", " ", "2024", ":", " we", "'", "ve", " got", " ", "12345", " apples", ".", "\n", "\n", " ", " Indented", "\tline", "   ", "\r", "\n", "end"});
    CHECK(pieces("deepseek-llm", 1) == Pieces{"中文测试", "，", "日本語テキスト한국어", " ЁЖ", " Привет", " 😀👍", " µÀé", " (", "x", "+", "y", ")^", "2", "=", "z", ";", " a", "_", "b", "-", "c"});
    CHECK(pieces("deepseek-llm", 2) == Pieces{" ", " spaces", "   "});
    CHECK(pieces("deepseek-coder", 0) == Pieces{"Hello", " world", "!", " It", "'", "s", " ", "2", "0", "2", "4", ":", " we", "'", "ve", " got", " ", "1", "2", "3", "4", "5", " apples", ".", "\n", "\n", " ", " Indented", "\tline", "   ", "\r", "\n", "end"});
    CHECK(pieces("deepseek-coder", 1) == Pieces{"中文测试", "，", "日本語テキスト한국어", " ЁЖ", " Привет", " 😀👍", " µÀé", " (", "x", "+", "y", ")", "^", "2", "=", "z", ";", " a", "_", "b", "-", "c"});
    CHECK(pieces("deepseek-coder", 2) == Pieces{" ", " spaces", "   "});
    CHECK(pieces("falcon", 0) == Pieces{"Hello", " world", "!", " It", "'", "s", " ", "202", "4", ":", " we", "'", "ve", " got", " ", "123", "45", " apples", ".", "\n\n ", " Indented", "\t", "line", "   \r", "\n", "end"});
    CHECK(pieces("falcon", 1) == Pieces{"中文测试", "，", "日本語テキスト한국어", " ЁЖ", " Привет", " 😀👍", " µÀé", " ", "(", "x", "+", "y", ")^", "2", "=", "z", ";", " a", "_", "b", "-", "c"});
    CHECK(pieces("falcon", 2) == Pieces{" ", " spaces", "   "});
    CHECK(pieces("default", 0) == Pieces{"Hello", " world", "!", " It", "'", "s", " ", "202", "4", ":", " we", "'", "ve", " got", " ", "123", "45", " apples", ".", "\n\n ", " Indented", "\t", "line", "   \r", "\n", "end"});
    CHECK(pieces("default", 1) == Pieces{"中文测试", "，", "日本語テキスト한국어", " ЁЖ", " Привет", " 😀👍", " µÀé", " ", "(", "x", "+", "y", ")^", "2", "=", "z", ";", " a", "_", "b", "-", "c"});
    CHECK(pieces("default", 2) == Pieces{" ", " spaces", "   "});
    CHECK(pieces("starcoder", 0) == Pieces{"Hello", " world", "!", " It", "'s", " ", "2", "0", "2", "4", ":", " we", "'ve", " got", " ", "1", "2", "3", "4", "5", " apples", ".", "\n\n ", " Indented", "\t", "line", "   \r", "\n", "end"});
    CHECK(pieces("starcoder", 1) == Pieces{"中文测试", "，", "日本語テキスト한국어", " ЁЖ", " Привет", " 😀👍", " µÀé", " (", "x", "+", "y", ")^", "2", "=", "z", ";", " a", "_", "b", "-", "c"});
    CHECK(pieces("starcoder", 2) == Pieces{" ", " spaces", "   "});
}

TEST_CASE("every pattern of llama.cpp's lists compiles; its own \\p{AFMoE_digits} is refused") {
    for (const auto& [name, patterns] : kPresets)
        for (const std::string& p : patterns) CHECK_NOTHROW((void)Regex::compile(p));
    const char* more[] = {
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
        "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        " ?[^(\\s|.,!?…。，、।۔،)]+",
        "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
    };
    for (const char* p : more) CHECK_NOTHROW((void)Regex::compile(p));
    check_refused("\\p{AFMoE_digits}", Status::unsupported, "AFMoE_digits");
}

TEST_CASE("malformed patterns are refused with the offset and the problem") {
    check_refused("(ab", Status::invalid_argument, "offset 0: the group opened here is not closed");
    check_refused("ab)", Status::invalid_argument, "offset 2: unmatched ')'");
    check_refused("[ab", Status::invalid_argument, "offset 0: the class opened here is not closed");
    check_refused("a**", Status::invalid_argument, "offset 2: nothing to repeat");
    check_refused("*a", Status::invalid_argument, "offset 0: nothing to repeat");
    check_refused("a|?", Status::invalid_argument, "offset 2: nothing to repeat");
    check_refused("^*", Status::invalid_argument, "offset 1: nothing to repeat");
    check_refused("a{2,1}", Status::invalid_argument, "maximum is below its minimum");
    check_refused("a{x}", Status::invalid_argument, "'{' does not begin a quantifier");
    check_refused("[z-a]", Status::invalid_argument, "offset 2: the range's end is below its start");
    check_refused("[\\d-z]", Status::invalid_argument, "a range cannot begin at a class escape");
    check_refused("[a-\\d]", Status::invalid_argument, "a range cannot end at a class escape");
    check_refused("ab\\", Status::invalid_argument, "offset 2: the pattern ends in '\\'");
    check_refused("\\q", Status::invalid_argument, "unknown escape \\q");
    check_refused("\\p{L", Status::invalid_argument, "not closed");
    check_refused("\\xZZ", Status::invalid_argument, "hexadecimal");
    check_refused("(?", Status::invalid_argument, "'(?' must be followed by");
    check_refused("a\xff", Status::invalid_argument, "offset 1: the pattern is not valid UTF-8");
    check_refused("[\\B]", Status::invalid_argument, "\\B inside a class");
}

TEST_CASE("constructs the engine does not have are refused by name") {
    check_refused("(a)\\1", Status::unsupported, "backreference \\1 is not supported");
    check_refused("\\k<x>", Status::unsupported, "named backreference");
    check_refused("(?<=a)b", Status::unsupported, "lookbehind");
    check_refused("(?<!a)b", Status::unsupported, "lookbehind");
    check_refused("(?<name>a)", Status::unsupported, "named group");
    check_refused("(?P<name>a)", Status::unsupported, "named group");
    check_refused("a*+", Status::unsupported, "possessive quantifier");
    check_refused("a{2}+", Status::unsupported, "possessive quantifier");
    check_refused("(?>a)", Status::unsupported, "atomic group");
    check_refused("(?i)a", Status::unsupported, "inline flag");
    check_refused("(?s:a)", Status::unsupported, "inline flag");
    check_refused("[\\p{L}&&[^\\p{Han}]]", Status::unsupported, "class intersection &&");
    check_refused("[[:alpha:]]", Status::unsupported, "POSIX class");
    check_refused("\\p{Greek}", Status::unsupported, "\\p{Greek}");
    check_refused("\\cA", Status::unsupported, "control escape");
    check_refused("\\01", Status::unsupported, "octal");
    check_refused("a{100000}", Status::unsupported, "repeat count above");
    check_refused("(?:a{1000}){1000}", Status::unsupported, "instructions");
    check_refused("(?:a?){3000}", Status::unsupported, "more than 2000 alternatives");
    // Loops around loops that can match empty double the program at each level.
    std::string nested = "a*";
    for (int level = 0; level < 30; ++level) nested = "(?:" + nested + ")*";
    check_refused(nested, Status::unsupported, "instructions");
    check_refused(std::string(300, '(') + std::string(300, ')'), Status::unsupported, "nesting");
}

TEST_CASE("search and regex_split refuse positions and offsets outside the text") {
    const auto cps = code_points("abc");
    const Regex re = Regex::compile("b");
    CHECK(re.search(cps, 3) == std::nullopt);
    CHECK_THROWS_AS((void)re.search(cps, 4), strata::Error);
    CHECK_THROWS_AS((void)strata::token::regex_split(re, cps, {1, 1}), strata::Error);
    CHECK_THROWS_AS((void)strata::token::regex_split(re, cps, {2, 2}), strata::Error);
    CHECK_THROWS_AS((void)strata::token::regex_split(re, cps, {SIZE_MAX, 4}), strata::Error);
}

TEST_CASE("matching takes time linear in the text, whatever the pattern") {
    // Each of these takes minutes (or overflows the stack) in a plain backtracking engine on a
    // megabyte; here each takes milliseconds. The bound only catches quadratic behaviour.
    struct Case {
        const char* pattern;
        uint32_t fill, last;
    };
    const Case cases[] = {
        {"\\s+$", ' ', 'x'},          {"(a|aa)*b", 'a', 'a'},           {"(?:a|aa)*c|a", 'a', 'a'},
        {"\\s+$|\\s", ' ', 'x'},      {"(?:x+x+)+y", 'x', 'x'},         {"(?=(a*)+b)a|a", 'a', 'a'},
        {"\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", ' ', 'x'},
        {"(?:'[sS]|'[tT])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}", ' ', 'x'},
    };
    // Self-relative, so that a slow build (Debug + sanitizers) or a busy machine does not fail
    // it: 16 times the text must take far less than 256 times as long (quadratic), here < 64x.
    // Each size's time is the least of three runs, so that one pause of the VM during a run
    // (the short one especially) is not read as quadratic behaviour.
    auto seconds_for = [](const Regex& re, const Case& c, size_t n, size_t& covered) {
        std::vector<uint32_t> run(n, c.fill);
        run.back() = c.last;
        double best = 1e30;
        for (int rep = 0; rep < 3; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            (void)re.search(run, 0);
            const auto parts = strata::token::regex_split(re, run, {run.size()});
            best = std::min(best, seconds_since(t0));
            covered = 0;
            for (size_t p : parts) covered += p;
        }
        return best;
    };
    for (const Case& c : cases) {
        CAPTURE(c.pattern);
        const Regex re = Regex::compile(c.pattern);
        size_t covered_small = 0, covered_big = 0;
        const double small = seconds_for(re, c, size_t{1} << 16, covered_small);
        const double big = seconds_for(re, c, size_t{1} << 20, covered_big);
        CAPTURE(small);
        CAPTURE(big);
        CHECK(big < 64 * std::max(small, 1e-3));
        CHECK(covered_small == size_t{1} << 16);
        CHECK(covered_big == size_t{1} << 20);
    }
}

TEST_CASE("random text splits into pieces that cover it, for every preset") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const std::pair<uint32_t, uint32_t> pools[] = {{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {' ', ' '}, {'\n', '\n'},
                                                   {'!', '/'}, {0x4E00, 0x4F00}, {0x3041, 0x30FA}, {0x410, 0x44F},
                                                   {0x1F600, 0x1F64F}, {0x300, 0x36F}, {0x80, 0x10FFFF}};
    for (const auto& [name, patterns] : kPresets) {
        CAPTURE(name);
        std::vector<Regex> compiled;
        for (const std::string& p : patterns) compiled.push_back(Regex::compile(p));
        for (int round = 0; round < 50; ++round) {
            std::vector<uint32_t> cps(rng() % 200);
            for (uint32_t& c : cps) {
                const auto [lo, hi] = pools[rng() % std::size(pools)];
                c = lo + uint32_t(rng() % (hi - lo + 1));
            }
            std::vector<size_t> offsets = {cps.size()};
            for (const Regex& re : compiled) {
                offsets = strata::token::regex_split(re, cps, offsets);
                size_t total = 0;
                for (size_t len : offsets) total += len;
                REQUIRE(total == cps.size());
            }
        }
    }
}
