// Byte-level BPE tokenizer: the pre-tokenizer splits, merges by rank (derived by hand),
// special tokens and round trips, on vocabularies built in the test.
#include <doctest/doctest.h>

#include <random>

#include "test_support.hpp"
#include "token/pretokenize.hpp"
#include "tokenizer_test_util.hpp"
#include "util/error.hpp"

using strata::token::PreTokenizer;
using strata::token::Tokenizer;
using Ids = std::vector<int32_t>;
using Words = std::vector<std::string>;

namespace {

const char* const kG = "\xc4\xa0";  // Ġ, GPT-2's character for the space byte

std::string g(const char* rest) { return std::string(kG) + rest; }

// Tokens 0..255 are the byte characters; then merged pieces; "el" has the worst rank so
// that "Hello" shows rank order: by position "el" comes before "ll".
strata::gguf::Writer hello_vocab(const char* pre = nullptr) {
    auto v = strata::test::bpe_base();
    v.add("ll");        // 256
    v.add(g("w"));      // 257
    v.add("or");        // 258
    v.add("He");        // 259
    v.add("llo");       // 260
    v.add(g("wor"));    // 261
    v.add("Hello");     // 262
    v.add(g("worl"));   // 263
    v.add(g("world"));  // 264
    v.add("el");        // 265
    v.add("<|endoftext|>", 0, 3);  // 266
    strata::gguf::Writer w;
    strata::test::write_vocab(w, "gpt2", v);
    w.set_string_array("tokenizer.ggml.merges", {"l l", g("w").insert(2, " "), "o r", "H e", "ll o",
                                                 g("w or"), "He llo", g("wor l"), g("worl d"), "e l"});
    w.set_i32("tokenizer.ggml.eos_token_id", 266);
    w.set_i32("tokenizer.ggml.bos_token_id", 266);
    if (pre) w.set_string("tokenizer.ggml.pre", pre);
    return w;
}

std::unique_ptr<Tokenizer> hello_tokenizer(const char* pre = nullptr) {
    auto file = strata::test::open_bytes(hello_vocab(pre));
    return Tokenizer::from_gguf(*file);
}

}  // namespace

TEST_CASE("the gpt2 pre-tokenizer splits words, contractions, numbers, punctuation and spaces") {
    CHECK(strata::token::pre_tokenize(*PreTokenizer::named("gpt-2"), "Hello world's  test 123!!\n") ==
          Words{"Hello", " world", "'s", " ", " test", " 123", "!!", "\n"});
    CHECK(strata::token::pre_tokenize(*PreTokenizer::named("gpt-2"), "I'LL \xc3\xa9t\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac") ==
          Words{"I", "'", "LL", " \xc3\xa9t\xc3\xa9", " \xe6\x97\xa5\xe6\x9c\xac"});
    CHECK(strata::token::pre_tokenize(*PreTokenizer::named("gpt-2"), "").empty());
    CHECK(strata::token::pre_tokenize(*PreTokenizer::named("gpt-2"), "a \t b") == Words{"a", " \t", " b"});
}

TEST_CASE("the qwen2 pre-tokenizer keeps digits apart and newlines together") {
    CHECK(strata::token::pre_tokenize(*PreTokenizer::named("qwen2"), "Hello 12345 DON'T\n\nx") ==
          Words{"Hello", " ", "1", "2", "3", "4", "5", " DON", "'T", "\n\n", "x"});
    CHECK(strata::token::pre_tokenize(*PreTokenizer::named("qwen2"), "\"quoted\" ok!\n") ==
          Words{"\"quoted", "\"", " ok", "!\n"});
}

TEST_CASE("invalid UTF-8 bytes become U+FFFD before pre-tokenizing, as llama.cpp does") {
    CHECK(strata::token::pre_tokenize(*PreTokenizer::named("gpt-2"), "a\xff\xfe b") ==
          Words{"a", "\xef\xbf\xbd\xef\xbf\xbd", " b"});
}

TEST_CASE("a bpe vocabulary reports its kind and does not add BOS unless asked") {
    auto tok = hello_tokenizer();
    CHECK(tok->type_name() == "bpe");
    CHECK(tok->n_vocab() == 267);
    CHECK_FALSE(tok->add_bos());
    CHECK(tok->is_eog(266));
}

TEST_CASE("Hello world! merges by rank exactly as derived by hand") {
    // "Hello": ll(0) before He(3) and el(9); then llo(4), He(3) -> He llo -> Hello(6).
    // "Ġworld": Ġw(1), or(2), Ġwor(5), Ġworl(7), Ġworld(8). "!" is byte 33.
    auto tok = hello_tokenizer();
    CHECK(tok->encode("Hello world!", false, false) == Ids{262, 264, 33});
    CHECK(tok->decode(Ids{262, 264, 33}) == "Hello world!");
    // Without "ll", "e l" (rank 9) is the only merge left after "H e" (rank 3).
    CHECK(tok->encode("Hel", false, false) == Ids{259, 'l'});
    CHECK(tok->token_to_piece(264) == " world");
    CHECK(tok->token_to_piece(' ') == " ");
}

TEST_CASE("bpe special tokens are ids with parse_special and bytes without") {
    auto tok = hello_tokenizer();
    CHECK(tok->encode("hi<|endoftext|>", false, true) == Ids{'h', 'i', 266});
    const Ids plain = tok->encode("hi<|endoftext|>", false, false);
    CHECK(plain.size() == 15);
    CHECK(tok->decode(plain) == "hi<|endoftext|>");
    CHECK(tok->decode(Ids{'h', 'i', 266}) == "hi<|endoftext|>");
    CHECK(tok->decode(Ids{'h', 'i', 266}, true) == "hi");
}

TEST_CASE("add_bos_token adds the BOS id to a bpe encoding") {
    auto w = hello_vocab();
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    auto file = strata::test::open_bytes(w);
    auto tok = Tokenizer::from_gguf(*file);
    CHECK(tok->encode("Hello", true, false) == Ids{266, 262});
    CHECK(tok->encode("Hello", false, false) == Ids{262});
}

TEST_CASE("random valid UTF-8 survives encode then decode where llama.cpp cleans no spaces") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (const char* pre : {"qwen2", "kimi-k2", "deepseek-v3", "smollm"}) {
        CAPTURE(pre);
        auto tok = hello_tokenizer(pre);
        for (int i = 0; i < 200; ++i) {
            const std::string text = strata::test::random_text(rng, 40);
            CAPTURE(text);
            CHECK(tok->decode(tok->encode(text, true, false), true) == text);
        }
    }
    // Invalid UTF-8 becomes U+FFFD first (llama.cpp), and gpt-2's clean_spaces drops " ." spaces.
    auto tok = hello_tokenizer("qwen2");
    CHECK(tok->decode(tok->encode("a\xff\x80" "b", false, false)) == "a\xef\xbf\xbd\xef\xbf\xbd" "b");
    auto gpt2 = hello_tokenizer("gpt-2");
    CHECK(gpt2->decode(gpt2->encode("Hi , there . Yes 's", false, false)) == "Hi, there. Yes's");
}
