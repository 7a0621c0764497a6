// SentencePiece-style tokenizer: hand-derived merges, byte fallback, special tokens, the
// decode rules and round trips, on vocabularies built in the test.
#include <doctest/doctest.h>

#include <random>

#include "test_support.hpp"
#include "tokenizer_test_util.hpp"
#include "util/error.hpp"

using strata::test::kSpace;
using strata::token::Tokenizer;
using Ids = std::vector<int32_t>;

namespace {

std::string sp(const char* rest) { return std::string(kSpace) + rest; }

// Ids 0..258 as spm_base(); then the pieces the hand derivation below uses.
strata::gguf::Writer hello_vocab() {
    auto v = strata::test::spm_base();
    v.add(kSpace, -1);        // 259
    v.add("l", -2);           // 260
    v.add("o", -2);           // 261
    v.add("e", -3);           // 262
    v.add("H", -3);           // 263
    v.add("w", -3);           // 264
    v.add("r", -3);           // 265
    v.add("d", -3);           // 266
    v.add("ll", -0.5f);       // 267
    v.add("He", -1.5f);       // 268
    v.add("llo", -0.7f);      // 269
    v.add(sp("H"), -2.5f);    // 270
    v.add(sp("w"), -0.8f);    // 271
    v.add("or", -1.2f);       // 272
    v.add(sp("wor"), -0.6f);  // 273
    v.add("ld", -2.0f);       // 274
    v.add("Hello", -3.0f);    // 275
    v.add(sp("world"), -0.2f);  // 276
    v.add("\xe6\x97\xa5\xe6\x9c\xac", -1);  // 277 日本
    v.add("\xe6\x97\xa5", -5);              // 278 日
    v.add("\xe6\x9c\xac", -5);              // 279 本
    v.add("<|im_end|>", 0, 3);  // 280 control
    v.add("<tool>", 0, 4);      // 281 user-defined
    v.add("<|im", 0, 3);        // 282 control, a prefix of 280
    strata::gguf::Writer w;
    strata::test::write_vocab(w, "llama", v);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_u32("tokenizer.ggml.eot_token_id", 280);
    return w;
}

std::unique_ptr<Tokenizer> hello_tokenizer() {
    auto file = strata::test::open_bytes(hello_vocab());
    return Tokenizer::from_gguf(*file);
}

int32_t byte_id(uint8_t b) { return 3 + b; }

}  // namespace

TEST_CASE("an spm vocabulary reports its kind, size and special ids") {
    auto tok = hello_tokenizer();
    CHECK(tok->type_name() == "spm");
    CHECK(tok->n_vocab() == 283);
    CHECK(tok->bos() == 1);
    CHECK(tok->eos() == 2);
    CHECK(tok->add_bos());
    CHECK_FALSE(tok->add_eos());
    CHECK(tok->is_eog(2));
    CHECK(tok->is_eog(280));
    CHECK_FALSE(tok->is_eog(1));
    CHECK_FALSE(tok->is_eog(-1));
}

TEST_CASE("Hello world merges by score exactly as derived by hand") {
    // "▁Hello▁world": ll(-0.5) llo(-0.7) ▁w(-0.8) or(-1.2) ▁wor(-0.6) He(-1.5) ld(-2.0)
    // ▁world(-0.2); ▁H(-2.5) is stale once H joined He; Hello(-3.0); "▁Hello" is no piece.
    auto tok = hello_tokenizer();
    CHECK(tok->encode("Hello world", true, false) == Ids{1, 259, 275, 276});
    CHECK(tok->encode("Hello world", false, false) == Ids{259, 275, 276});
    // llama.cpp's detokenize: the prefix space is removed from the first piece only, and not
    // when remove_special dropped a BOS before it.
    CHECK(tok->decode(Ids{259, 275, 276}) == "Hello world");
    CHECK(tok->decode(Ids{1, 259, 275, 276}, true) == " Hello world");
    CHECK(tok->decode(Ids{1, 259, 275, 276}) == "<s> Hello world");
}

TEST_CASE("characters missing from an spm vocabulary fall back to byte tokens") {
    auto tok = hello_tokenizer();
    // "▁Hé": ▁H is a piece, é (C3 A9) is not.
    CHECK(tok->encode("H\xc3\xa9", false, false) == Ids{270, byte_id(0xC3), byte_id(0xA9)});
    CHECK(tok->decode(Ids{270, byte_id(0xC3), byte_id(0xA9)}) == "H\xc3\xa9");
    CHECK(tok->token_to_piece(byte_id(0xC3)) == "\xc3");
    CHECK(tok->token_to_piece(270) == " H");
}

TEST_CASE("multi-byte UTF-8 characters merge like any other characters") {
    auto tok = hello_tokenizer();
    CHECK(tok->encode("\xe6\x97\xa5\xe6\x9c\xac", false, false) == Ids{259, 277});
    CHECK(tok->encode("\xe6\x9c\xac\xe6\x97\xa5", false, false) == Ids{259, 279, 278});
}

TEST_CASE("the empty string gives only the requested special tokens") {
    auto tok = hello_tokenizer();
    CHECK(tok->encode("", true, false) == Ids{1});
    CHECK(tok->encode("", false, false).empty());
    CHECK(tok->decode(Ids{}, true).empty());
    CHECK(tok->decode(Ids{1}, true).empty());
}

TEST_CASE("a text of spaces becomes one space piece per space plus the prefix") {
    auto tok = hello_tokenizer();
    CHECK(tok->encode("  ", false, false) == Ids{259, 259, 259});
    CHECK(tok->decode(Ids{259, 259, 259}) == "  ");
    CHECK(tok->decode(Ids{259}) == "");
}

TEST_CASE("add_space_prefix false leaves the text without a leading space piece") {
    auto w = hello_vocab();
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
    auto file = strata::test::open_bytes(w);
    auto tok = Tokenizer::from_gguf(*file);
    CHECK(tok->encode("Hello world", false, false) == Ids{275, 276});
    CHECK(tok->decode(Ids{259, 275}) == " Hello");
}

TEST_CASE("control tokens are matched only with parse_special, longest text first") {
    auto tok = hello_tokenizer();
    CHECK(tok->encode("Hello<|im_end|>", false, true) == Ids{259, 275, 280});
    CHECK(tok->encode("</s><|im", false, true) == Ids{2, 282});
    const Ids plain = tok->encode("Hello<|im_end|>", false, false);
    for (int32_t id : plain) CHECK(id < 280);
    CHECK(tok->decode(plain) == "Hello<|im_end|>");
    // After a special token the next text fragment gets the space prefix again (as llama.cpp);
    // decode keeps it there, as llama.cpp's does.
    const Ids ids = tok->encode("Hello<|im_end|>Hello world", true, true);
    CHECK(ids == Ids{1, 259, 275, 280, 259, 275, 276});
    CHECK(tok->decode(ids) == "<s> Hello<|im_end|> Hello world");
    CHECK(tok->decode(ids, true) == " Hello Hello world");
}

TEST_CASE("user-defined tokens are matched even without parse_special") {
    auto tok = hello_tokenizer();
    CHECK(tok->encode("<tool>Hello", false, false) == Ids{281, 259, 275});
    CHECK(tok->decode(Ids{281, 259, 275}, true) == "<tool> Hello");
}

TEST_CASE("decode and token_to_piece name an out-of-range id") {
    auto tok = hello_tokenizer();
    try {
        (void)tok->decode(Ids{1, 283});
        FAIL("no error");
    } catch (const strata::Error& e) {
        CHECK(e.status() == strata::Status::invalid_argument);
        CHECK(std::string(e.what()).find("283") != std::string::npos);
    }
    CHECK_THROWS_AS((void)tok->token_to_piece(-1), strata::Error);
}

TEST_CASE("random text survives encode then decode with the hand-made spm vocabulary") {
    auto tok = hello_tokenizer();
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 300; ++i) {
        const std::string text = strata::test::random_text(rng, 40);
        CAPTURE(text);
        CHECK(tok->decode(tok->encode(text, false, false)) == text);
        // llama.cpp keeps the prefix space after a dropped BOS.
        CHECK(tok->decode(tok->encode(text, true, false), true) == (text.empty() ? "" : " " + text));
    }
}

TEST_CASE("the byte-level vocabulary of strata-mkmodel spells any UTF-8 with byte tokens") {
    auto file = strata::test::open_bytes(strata::test::mkmodel_vocab(400));
    auto tok = Tokenizer::from_gguf(*file);
    CHECK(tok->n_vocab() == 400);
    CHECK(tok->bos() == 1);
    CHECK(tok->eos() == 2);
    // No "▁" piece: the prefix itself is spelled E2 96 81.
    CHECK(tok->encode("Hi", true, false) ==
          Ids{1, byte_id(0xE2), byte_id(0x96), byte_id(0x81), byte_id('H'), byte_id('i')});
    CHECK(tok->decode(tok->encode("Hi there", false, false)) == "Hi there");
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed ^ 0x5bd1e995);
    for (int i = 0; i < 300; ++i) {
        const std::string text = strata::test::random_text(rng, 40);
        CAPTURE(text);
        const Ids ids = tok->encode(text, false, false);
        for (int32_t id : ids) CHECK((id >= 0 && id < 259));
        CHECK(tok->decode(ids) == text);
    }
}
