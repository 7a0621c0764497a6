// Every way a GGUF vocabulary can be missing or inconsistent gives a clear error naming
// the key (Status::format), or the value (Status::unsupported).
#include <doctest/doctest.h>

#include <functional>

#include "tokenizer_test_util.hpp"
#include "util/error.hpp"

using strata::Status;
using strata::gguf::ValueType;
using strata::gguf::Writer;
using strata::token::Tokenizer;

namespace {

Writer spm_vocab() {
    auto v = strata::test::spm_base();
    v.add(strata::test::kSpace, -1);
    Writer w;
    strata::test::write_vocab(w, "llama", v);
    return w;
}

Writer bpe_vocab() {
    auto v = strata::test::bpe_base();
    v.add("ab");
    Writer w;
    strata::test::write_vocab(w, "gpt2", v);
    w.set_string_array("tokenizer.ggml.merges", {"a b"});
    return w;
}

void check_error(const Writer& w, Status status, const std::string& needle) {
    auto file = strata::test::open_bytes(w);
    try {
        (void)Tokenizer::from_gguf(*file);
        FAIL("no error; expected one mentioning " << needle);
    } catch (const strata::Error& e) {
        const std::string message = e.what();
        CAPTURE(message);
        CHECK(e.status() == status);
        CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
}

}  // namespace

TEST_CASE("the base vocabularies of these tests load") {
    auto spm = strata::test::open_bytes(spm_vocab());
    CHECK(Tokenizer::from_gguf(*spm)->n_vocab() == 260);
    auto bpe = strata::test::open_bytes(bpe_vocab());
    CHECK(Tokenizer::from_gguf(*bpe)->n_vocab() == 257);
}

TEST_CASE("a missing or unknown tokenizer model is refused") {
    Writer w = spm_vocab();
    w.remove("tokenizer.ggml.model");
    check_error(w, Status::format, "tokenizer.ggml.model");
    w.set_u32("tokenizer.ggml.model", 1);
    check_error(w, Status::format, "tokenizer.ggml.model");
    w.set_string("tokenizer.ggml.model", "bert");
    check_error(w, Status::unsupported, "'bert'");
}

TEST_CASE("missing, mistyped or empty token lists are refused") {
    Writer w = spm_vocab();
    w.remove("tokenizer.ggml.tokens");
    check_error(w, Status::format, "tokenizer.ggml.tokens");
    const int32_t ints[] = {1, 2};
    w.set_array("tokenizer.ggml.tokens", ValueType::i32, ints, 2);
    check_error(w, Status::format, "tokenizer.ggml.tokens");
    w.set_string_array("tokenizer.ggml.tokens", {});
    check_error(w, Status::format, "tokenizer.ggml.tokens");
}

TEST_CASE("scores and token types must match the token count and their types") {
    Writer w = spm_vocab();
    const float scores[] = {0, 1, 2};
    w.set_array("tokenizer.ggml.scores", ValueType::f32, scores, 3);
    check_error(w, Status::format, "tokenizer.ggml.scores");
    const double wide[] = {0, 1, 2};
    w.set_array("tokenizer.ggml.scores", ValueType::f64, wide, 3);
    check_error(w, Status::format, "tokenizer.ggml.scores");

    w = spm_vocab();
    const int32_t types[] = {1, 1};
    w.set_array("tokenizer.ggml.token_type", ValueType::i32, types, 2);
    check_error(w, Status::format, "tokenizer.ggml.token_type");
}

TEST_CASE("a token type outside 0..6 is refused with its index") {
    auto v = strata::test::spm_base();
    v.add("x", 0, 7);
    Writer w;
    strata::test::write_vocab(w, "llama", v);
    check_error(w, Status::format, "tokenizer.ggml.token_type[259] = 7");
}

TEST_CASE("a byte token whose text is not <0xNN> is refused") {
    auto v = strata::test::spm_base();
    v.add("<0xZZ>", 0, 6);
    Writer w;
    strata::test::write_vocab(w, "llama", v);
    check_error(w, Status::format, "<0xZZ>");
}

TEST_CASE("special token ids outside the vocabulary are refused naming the key") {
    for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                            "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
                            "tokenizer.ggml.eot_token_id"}) {
        CAPTURE(key);
        Writer w = spm_vocab();
        w.set_u32(key, 260);
        check_error(w, Status::format, key);
        w.set_i32(key, -1);
        check_error(w, Status::format, key);
        w.set_string(key, "1");
        check_error(w, Status::format, key);
    }
}

TEST_CASE("add_bos_token without a BOS id takes llama.cpp's default id 11; of the wrong type it is refused") {
    Writer w = bpe_vocab();
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    {
        auto file = strata::test::open_bytes(w);
        auto tok = Tokenizer::from_gguf(*file);
        CHECK(tok->bos() == 11);
        CHECK(tok->encode("ab", true, false) == std::vector<int32_t>{11, 256});
        CHECK(tok->is_eog(11));  // eos defaults to 11 too
    }
    w.set_u32("tokenizer.ggml.add_bos_token", 1);
    check_error(w, Status::format, "tokenizer.ggml.add_bos_token");
}

TEST_CASE("a bpe vocabulary needs well-formed merges") {
    Writer w = bpe_vocab();
    w.remove("tokenizer.ggml.merges");
    check_error(w, Status::format, "tokenizer.ggml.merges");
    w.set_string_array("tokenizer.ggml.merges", {"a b", "ab"});
    check_error(w, Status::format, "tokenizer.ggml.merges[1]");
    w.set_string_array("tokenizer.ggml.merges", {"a "});
    check_error(w, Status::format, "tokenizer.ggml.merges[0]");
}

TEST_CASE("an unknown pre-tokenizer is refused naming it, never replaced by another") {
    Writer w = bpe_vocab();
    w.set_string("tokenizer.ggml.pre", "youtu");
    check_error(w, Status::unsupported, "'youtu'");
    check_error(w, Status::unsupported, "'kimi-k2'");  // the message lists the supported names
    w.set_u32("tokenizer.ggml.pre", 3);
    check_error(w, Status::format, "tokenizer.ggml.pre");
    for (const char* ok : {"default", "gpt2", "gpt-2", "qwen2", "llama-bpe", "kimi-k2", "deepseek-v3"}) {
        CAPTURE(ok);
        w.set_string("tokenizer.ggml.pre", ok);
        auto file = strata::test::open_bytes(w);
        CHECK(Tokenizer::from_gguf(*file)->encode("ab", false, false) == std::vector<int32_t>{256});
    }
}

TEST_CASE("a vocabulary without byte tokens spells unknown characters as one unk each") {
    strata::test::VocabSpec v;
    v.add("<unk>", 0, 2);
    v.add(strata::test::kSpace, -1);
    v.add("a", -1);
    Writer w;
    strata::test::write_vocab(w, "llama", v);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    auto file = strata::test::open_bytes(w);
    auto tok = Tokenizer::from_gguf(*file);
    CHECK(tok->bos() == 1);  // llama.cpp's default id, which exists here
    CHECK(tok->encode("a\xc3\xa9", true, false) == std::vector<int32_t>{1, 2, 0});
    CHECK(tok->decode(std::vector<int32_t>{1, 2, 0}) == "a<unk>");  // llama.cpp renders its text
    // The space after an unknown character is text, not a prefix to remove.
    CHECK(tok->encode("\xc3\xa9 a", false, false) == std::vector<int32_t>{1, 0, 1, 2});
    CHECK(tok->decode(std::vector<int32_t>{1, 0, 1, 2}) == "<unk> a");
    CHECK(tok->decode(std::vector<int32_t>{1, 0, 1, 2}, true) == " a");
}
