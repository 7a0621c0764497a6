// The pre-tokenizers: every name llama.cpp gives the families strata runs, and the hand-written
// splitters against the regex engine running the pattern they stand for, on random text.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "token/pretokenize.hpp"
#include "token/pretokenize_patterns.hpp"
#include "token/regex.hpp"
#include "util/error.hpp"

using strata::token::PreTokenizer;
using Splitter = PreTokenizer::Splitter;
using Words = std::vector<std::string>;

namespace {

// Code points drawn to hit every rule: ASCII, every kind of whitespace, letters of several
// scripts and cases, marks, Han (inside and outside llama.cpp's ranges), digits of several
// scripts, punctuation, symbols, emoji, controls and unassigned code points.
std::vector<uint32_t> random_text(std::mt19937_64& rng, size_t n) {
    static const std::vector<uint32_t> pool = {
        'a', 'b', 'Z', 's', 'S', 't', 'T', 'r', 'e', 'E', 'v', 'l', 'L', 'm', 'd', 'D', '\'', '\'', ' ', ' ', ' ',
        ' ', '\t', '\n', '\n', '\r', 0x0B, 0x0C, 0x1C, '0', '1', '9', '.', ',', '!', '?', '(', '$', '+', '<', '^',
        '~', '|', '`', '_', '-', '"', 0x85, 0xA0, 0x1680, 0x2003, 0x2028, 0x202F, 0x3000, 0xE9, 0xDF, 0x130,
        0x1C5, 0x3A3, 0x3C3, 0x416, 0x436, 0x5D0, 0x627, 0x915, 0x94D, 0x93F, 0x301, 0x20DD, 0xE01, 0xE31,
        0x4E2D, 0x6587, 0x3400, 0x20000, 0x30000, 0xF900, 0x3042, 0x30AB, 0xAC00, 0x660, 0x966, 0xFF11, 0x2160,
        0xBD, 0x2460, 0x2026, 0x201C, 0x3001, 0x3002, 0xFF01, 0x20AC, 0x2192, 0xA9, 0x1F600, 0x1F3FD, 0x200D,
        0xFE0F, 0x00, 0x7F, 0x378, 0xE000, 0xFFFD, 0xFEFF, 0x10FFFF};
    std::vector<uint32_t> out(n);
    for (auto& cp : out) cp = pool[rng() % pool.size()];
    return out;
}

std::vector<size_t> whole(size_t n) { return n ? std::vector<size_t>{n} : std::vector<size_t>{}; }

// Random segments covering n code points, as an earlier step would leave them.
std::vector<size_t> random_segments(std::mt19937_64& rng, size_t n) {
    std::vector<size_t> out;
    for (size_t left = n; left;) {
        const size_t len = std::min(left, size_t(1 + rng() % 12));
        out.push_back(len);
        left -= len;
    }
    return out;
}

// llama.cpp's kimi-k2 rules written as one regex (the hand-written splitter is what llama.cpp
// runs; this is the same rule set in the engine's terms, for the differential check).
constexpr const char kKimiRulesAsRegex[] =
    "\\p{Han}+|[^\\r\\n\\p{L}\\p{N}]?(?:(?!\\p{Han})\\p{L})+(?:'[sStTmMdD]|'[rR][eE]|'[vV][eE]|'[lL][lL])?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

}  // namespace

TEST_CASE("every pre-tokenizer name of the supported families builds, and an unknown one is refused by name") {
    for (const char* name : {"default", "gpt-2", "gpt2", "mpt", "llama-bpe", "llama3", "llama-v3", "deepseek-llm",
                             "deepseek-coder", "deepseek-v3", "falcon", "starcoder", "refact", "command-r", "smollm",
                             "qwen2", "qwen35", "kimi-k2"}) {
        CAPTURE(name);
        auto p = PreTokenizer::named(name);
        CHECK(p->name() == name);
        CHECK(p->split(std::vector<uint32_t>{'a', ' ', 'b'}).size() >= 2);
    }
    CHECK(PreTokenizer::named("llama-bpe")->ignore_merges());
    CHECK(PreTokenizer::named("llama-bpe")->add_bos_default());
    CHECK_FALSE(PreTokenizer::named("qwen2")->clean_spaces());
    CHECK(PreTokenizer::named("gpt-2")->clean_spaces());
    try {
        PreTokenizer::named("youtu");
        FAIL("an unknown pre-tokenizer was accepted");
    } catch (const strata::Error& e) {
        CHECK(e.status() == strata::Status::unsupported);
        const std::string m = e.what();
        CHECK(m.find("'youtu'") != std::string::npos);
        CHECK(m.find("'kimi-k2'") != std::string::npos);
        CHECK(m.find("'deepseek-v3'") != std::string::npos);
    }
}

TEST_CASE("the hand-written splitters cut exactly where the regex engine cuts with their pattern") {
    struct Case {
        Splitter kind;
        const char* pattern;
    };
    const Case cases[] = {{Splitter::gpt2, strata::token::patterns::gpt2},
                          {Splitter::llama3, strata::token::patterns::llama3},
                          {Splitter::qwen2, strata::token::patterns::qwen2},
                          {Splitter::qwen35, strata::token::patterns::qwen35},
                          {Splitter::kimi_k2, kKimiRulesAsRegex}};
    std::mt19937_64 rng(strata::test::test_seed());
    for (const Case& c : cases) {
        CAPTURE(c.pattern);
        const auto re = strata::token::Regex::compile(c.pattern);
        for (int trial = 0; trial < 400; ++trial) {
            const auto text = random_text(rng, 1 + rng() % 60);
            const auto segments = trial % 2 ? random_segments(rng, text.size()) : whole(text.size());
            const auto by_hand = strata::token::split_by_hand(c.kind, text, segments);
            const auto by_regex = strata::token::regex_split(re, text, segments);
            if (by_hand != by_regex) {
                std::string cps;
                for (uint32_t cp : text) cps += std::to_string(cp) + " ";
                FAIL_CHECK("seed " << strata::test::test_seed() << " trial " << trial << ": code points " << cps);
                break;
            }
        }
    }
}

TEST_CASE("hand-worked splits of llama.cpp's rule sets") {
    auto words = [](const char* pre, const char* text) { return strata::token::pre_tokenize(*PreTokenizer::named(pre), text); };
    // llama-bpe: digits in threes, a leading non-letter joins the word, newlines stay together.
    CHECK(words("llama-bpe", "Hello 1234567 world's\n\n  x") ==
          Words{"Hello", " ", "123", "456", "7", " world", "'s", "\n\n", " ", " x"});
    // kimi-k2: Han runs apart from other letters; kana are letters, not Han.
    CHECK(words("kimi-k2", "\xe4\xb8\xad\xe6\x96\x87" "abc\xe3\x81\x82 12345") ==
          Words{"\xe4\xb8\xad\xe6\x96\x87", "abc\xe3\x81\x82", " ", "123", "45"});
    // deepseek-v3: digits in threes first, CJK runs, then words with marks.
    CHECK(words("deepseek-v3", "x1234 \xe4\xb8\xad") == Words{"x", "123", "4", " ", "\xe4\xb8\xad"});
    // smollm / starcoder: each digit alone, then GPT-2's rules.
    CHECK(words("smollm", "ab12 cd") == Words{"ab", "1", "2", " cd"});
    CHECK(words("gpt-2", "").empty());
}
