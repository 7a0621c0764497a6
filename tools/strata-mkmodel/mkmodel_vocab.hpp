// Vocabularies for strata-mkmodel (included only by strata-mkmodel.cpp): a byte-level
// SentencePiece-style one ("llama") and a GPT-2-style byte-level BPE one ("gpt2"), both
// deterministic and sized to exactly n_vocab tokens.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "strata/strata.hpp"

namespace mkmodel {

// llama.cpp token types.
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6 };

inline std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else if (cp < 0x800) {
        s += char(0xC0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3F));
    } else {
        s += char(0xE0 | (cp >> 12));
        s += char(0x80 | ((cp >> 6) & 0x3F));
        s += char(0x80 | (cp & 0x3F));
    }
    return s;
}

// GPT-2's byte -> unicode symbol table: printable Latin-1 bytes ('!'..'~', U+00A1..U+00AC,
// U+00AE..U+00FF) stand for themselves; the other 68 bytes, in increasing order, take the code
// points U+0100, U+0101, ... (so the space 0x20 becomes U+0120 'Ġ').
inline std::vector<std::string> byte_symbols() {
    std::vector<std::string> out(256);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
        const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        out[b] = utf8(printable ? b : next++);
    }
    return out;
}

// Minimum vocabulary sizes: the fixed tokens each vocabulary starts with.
constexpr int64_t kMinSpmVocab = 3 + 256;  // <unk> <s> </s> + 256 byte tokens
constexpr int64_t kMinBpeVocab = 256 + 1;  // 256 byte symbols + <|endoftext|>

// A byte-level SentencePiece-style vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then
// filler pieces up to n_vocab.
inline void add_spm_vocabulary(strata::writer& w, int64_t n_vocab) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {kUnknown, kControl, kControl};
    for (int b = 0; b < 256; ++b) {
        char piece[8];
        std::snprintf(piece, sizeof piece, "<0x%02X>", b);
        tokens.push_back(piece);
        types.push_back(kByte);
    }
    for (int64_t i = int64_t(tokens.size()); i < n_vocab; ++i) {
        tokens.push_back("\xe2\x96\x81t" + std::to_string(i));  // "▁t<i>"
        types.push_back(kNormal);
    }
    std::vector<float> scores(static_cast<size_t>(n_vocab));
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = -float(i);
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_array("tokenizer.ggml.scores", STRATA_VALUE_F32, scores.data(), scores.size());
    w.set_array("tokenizer.ggml.token_type", STRATA_VALUE_I32, types.data(), types.size());
    w.set_uint("tokenizer.ggml.bos_token_id", STRATA_VALUE_U32, 1);
    w.set_uint("tokenizer.ggml.eos_token_id", STRATA_VALUE_U32, 2);
    w.set_uint("tokenizer.ggml.unknown_token_id", STRATA_VALUE_U32, 0);
}

struct BpeVocab {
    std::vector<std::string> tokens;  // 256 byte symbols, merged tokens, <|endoftext|> last
    std::vector<int32_t> types;
    std::vector<std::string> merges;  // "left right", in priority order
};

// The merges: first a hand-picked list of frequent English pieces (each built from pieces
// that exist by then), then a breadth-first extension: every token made so far, in creation
// order, followed by each of the most frequent English letters, until the vocabulary is full.
// Every merge's two parts are tokens, and so is their concatenation.
inline BpeVocab make_bpe_vocabulary(int64_t n_vocab) {
    BpeVocab v;
    const std::vector<std::string> sym = byte_symbols();
    const std::string G = sym[' '];  // "Ġ", the byte-level space
    v.tokens = sym;
    v.types.assign(256, kNormal);
    std::unordered_set<std::string> have(v.tokens.begin(), v.tokens.end());
    const size_t n_merged = size_t(n_vocab) - 1 - 256;
    std::vector<std::string> made;  // merged tokens in creation order

    auto merge = [&](const std::string& a, const std::string& b) {
        if (made.size() >= n_merged || !have.count(a) || !have.count(b) || have.count(a + b)) return;
        v.merges.push_back(a + " " + b);
        v.tokens.push_back(a + b);
        v.types.push_back(kNormal);
        have.insert(a + b);
        made.push_back(a + b);
    };
    const std::pair<const char*, const char*> seed_merges[] = {
        {"Ġ", "t"}, {"h", "e"}, {"Ġ", "a"}, {"i", "n"}, {"Ġt", "he"}, {"e", "r"}, {"o", "n"}, {"Ġ", "s"},
        {"e", "n"}, {"Ġ", "w"}, {"a", "t"}, {"r", "e"}, {"n", "d"}, {"Ġ", "o"}, {"Ġ", "b"}, {"e", "s"},
        {"Ġ", "c"}, {"o", "r"}, {"i", "s"}, {"a", "n"}, {"Ġ", "f"}, {"in", "g"}, {"Ġ", "p"}, {"e", "d"},
        {"Ġ", "m"}, {"o", "u"}, {"Ġa", "nd"}, {"Ġ", "i"}, {"Ġ", "th"}, {"l", "l"}, {"Ġo", "f"}, {"i", "t"},
        {"a", "r"}, {"Ġ", "d"}, {"Ġt", "o"}, {"Ġ", "h"}, {"a", "l"}, {"Ġi", "n"}, {"Ġ", "l"}, {"t", "h"},
    };
    for (const auto& [a, b] : seed_merges) merge(a, b);
    const char* letters = "etaoinshrdlcum";
    for (const char* c = letters; *c; ++c) merge(G, std::string(1, *c));
    for (const char* c = letters; *c; ++c)
        for (const char* d = letters; *d; ++d) merge(std::string(1, *c), std::string(1, *d));
    for (size_t i = 0; made.size() < n_merged && i < made.size(); ++i) {
        const std::string base = made[i];  // a copy: merge() appends to `made`
        for (const char* c = letters; *c; ++c) merge(base, std::string(1, *c));
    }
    while (v.tokens.size() + 1 < size_t(n_vocab)) {  // not reached for any size asked so far
        v.tokens.push_back("<|filler_" + std::to_string(v.tokens.size()) + "|>");
        v.types.push_back(kControl);
    }
    v.tokens.push_back("<|endoftext|>");
    v.types.push_back(kControl);
    return v;
}

inline void add_bpe_vocabulary(strata::writer& w, int64_t n_vocab) {
    const BpeVocab v = make_bpe_vocabulary(n_vocab);
    const uint64_t eot = v.tokens.size() - 1;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "default");
    w.set_string_array("tokenizer.ggml.tokens", v.tokens);
    w.set_array("tokenizer.ggml.token_type", STRATA_VALUE_I32, v.types.data(), v.types.size());
    w.set_string_array("tokenizer.ggml.merges", v.merges);
    w.set_uint("tokenizer.ggml.bos_token_id", STRATA_VALUE_U32, eot);
    w.set_uint("tokenizer.ggml.eos_token_id", STRATA_VALUE_U32, eot);
}

}  // namespace mkmodel
