// Small GGUF vocabularies built in memory for the tokenizer tests.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/model_file.hpp"
#include "gguf/writer.hpp"
#include "token/tokenizer.hpp"
#include "token/unicode.hpp"

namespace strata::test {

struct VocabSpec {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    int32_t add(std::string text, float score = 0.0f, int32_t type = 1) {
        tokens.push_back(std::move(text));
        scores.push_back(score);
        types.push_back(type);
        return int32_t(tokens.size()) - 1;
    }
};

inline void write_vocab(gguf::Writer& w, const std::string& model, const VocabSpec& v) {
    w.set_string("tokenizer.ggml.model", model);
    w.set_string_array("tokenizer.ggml.tokens", v.tokens);
    if (model == "llama")
        w.set_array("tokenizer.ggml.scores", gguf::ValueType::f32, v.scores.data(), v.scores.size());
    w.set_array("tokenizer.ggml.token_type", gguf::ValueType::i32, v.types.data(), v.types.size());
}

inline std::unique_ptr<gguf::ModelFile> open_bytes(const gguf::Writer& w, const char* name = "vocab.gguf") {
    return gguf::ModelFile::parse_memory(w.to_bytes(), name);
}

inline const char* const kSpace = "\xe2\x96\x81";  // U+2581

// <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF> (ids 3..258).
inline VocabSpec spm_base() {
    VocabSpec v;
    v.add("<unk>", 0, 2);
    v.add("<s>", 0, 3);
    v.add("</s>", 0, 3);
    for (int b = 0; b < 256; ++b) {
        char piece[8];
        std::snprintf(piece, sizeof piece, "<0x%02X>", b);
        v.add(piece, 0, 6);
    }
    return v;
}

// The byte-level vocabulary of tools/strata-mkmodel/strata-mkmodel.cpp (ids as u32, scores -i).
inline gguf::Writer mkmodel_vocab(int n_vocab) {
    VocabSpec v = spm_base();
    for (int i = int(v.tokens.size()); i < n_vocab; ++i) v.add(std::string(kSpace) + "t" + std::to_string(i));
    for (size_t i = 0; i < v.scores.size(); ++i) v.scores[i] = -float(i);
    gguf::Writer w;
    write_vocab(w, "llama", v);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    return w;
}

// Byte-level BPE base: token b (0..255) is the GPT-2 character of byte b.
inline VocabSpec bpe_base() {
    VocabSpec v;
    for (int b = 0; b < 256; ++b) {
        std::string s;
        token::append_utf8(s, token::byte_to_char(uint8_t(b)));
        v.add(s);
    }
    return v;
}

// Printable ASCII mixed with multi-byte UTF-8 (2, 3 and 4 bytes), never U+2581.
inline std::string random_text(std::mt19937_64& rng, size_t max_chars) {
    static const char* const kExtra[] = {"\xc3\xa9", "\xc3\xbc", "\xd0\x96", "\xce\xbb", "\xe6\x97\xa5",
                                         "\xe6\x9c\xac", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xd9\xa3",
                                         "\xe3\x81\x82", " ", "  ", "\n", "\t"};
    std::string s;
    const size_t n = rng() % (max_chars + 1);
    for (size_t i = 0; i < n; ++i) {
        if (rng() % 4 == 0) s += kExtra[rng() % std::size(kExtra)];
        else s += char(0x20 + rng() % 95);
    }
    return s;
}

}  // namespace strata::test
