// Tokenizer: text <-> token ids with the vocabulary stored in a GGUF model.
//
//   auto tok = strata::token::Tokenizer::from_gguf(*model_file);
//   std::vector<int32_t> ids = tok->encode("Hello", /*add_special=*/true, /*parse_special=*/false);
//   std::string text = tok->decode(ids, /*remove_special=*/true);
//
// Two kinds, chosen by tokenizer.ggml.model:
//  * "llama" -> "spm": SentencePiece-style. Text is normalized by replacing every space with
//    U+2581 and, when tokenizer.ggml.add_space_prefix (default true), prepending one U+2581
//    to every text fragment that starts the input or follows a special token (as llama.cpp).
//    Pieces are merged by score; characters not in the vocabulary become <0xNN> byte tokens
//    (or one <unk> per character when the vocabulary has no byte tokens).
//  * "gpt2" -> "bpe": byte-level BPE with the pre-tokenizer of tokenizer.ggml.pre: "default"
//    or "gpt2" (the GPT-2 regex) or "qwen2"; any other value is refused (unsupported).
//
// Special tokens: user-defined tokens (type 4) are always matched in the text, as llama.cpp
// and SentencePiece do; control (3) and unknown (2) tokens only when parse_special is true,
// otherwise their text is tokenized like any other text. Longer texts are matched first.
//
// Decoding (decode, token_to_piece): normal tokens give their text (SPM: U+2581 -> space;
// BPE: characters -> bytes), byte tokens their byte, user-defined tokens their text, control
// tokens their text unless remove_special, unknown tokens U+2585 (as llama.cpp), unused
// tokens nothing. SPM with add_space_prefix: decode removes one leading space from the first
// piece of each text run that starts the output or follows a control or user-defined
// token — undoing the prefix encode added there, so that
// decode(encode(t, add_special, parse_special), true) == t. (llama.cpp strips only at the
// start; it keeps " user" in "<|im_start|> user".) token_to_piece never strips.
// SPM decode also turns a U+2581 spelled by byte tokens back into a space (vocabularies
// without a "▁" piece, like the byte-level one of strata-mkmodel, spell it <0xE2><0x96><0x81>),
// so a literal U+2581 in the input decodes as a space; token_to_piece gives such bytes raw.
//
// Limits: BPE letter/number classes come from a table of common scripts (token/unicode.hpp);
// no Unicode normalization (NFC/NFKC) is applied; token attributes lstrip/rstrip that
// llama.cpp sets for some named models are not applied.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "token/vocab.hpp"

namespace strata::gguf {
class ModelFile;
}

namespace strata::token {

class Tokenizer {
public:
    // Throws strata::Error: Status::format naming the key when the vocabulary is missing or
    // inconsistent, Status::unsupported for an unknown tokenizer.ggml.model or .pre.
    static std::unique_ptr<Tokenizer> from_gguf(const gguf::ModelFile& file);

    int32_t n_vocab() const { return vocab_.n_vocab(); }
    int32_t bos() const { return vocab_.bos; }  // -1 when the model has none
    int32_t eos() const { return vocab_.eos; }
    bool add_bos() const { return vocab_.add_bos; }
    bool add_eos() const { return vocab_.add_eos; }

    // add_special: prepend BOS / append EOS as the model asks (add_bos(), add_eos()).
    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

    // Throws strata::Error(invalid_argument) naming the first id outside [0, n_vocab).
    std::string decode(std::span<const int32_t> tokens, bool remove_special = false) const;

    // The bytes one token contributes (may be part of a UTF-8 character). Throws like decode.
    std::string token_to_piece(int32_t token) const;

    // End of generation: eos, eot, eom, and control tokens that end a turn in common chat
    // formats (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, ...).
    bool is_eog(int32_t token) const;

    std::string_view type_name() const { return vocab_.kind == Vocab::Kind::spm ? "spm" : "bpe"; }

    const Vocab& vocab() const { return vocab_; }

private:
    explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
    void check_id(int32_t token) const;
    // Appends the bytes a token contributes on its own (SPM normal pieces: U+2581 -> space).
    void append_piece(std::string& out, int32_t token, bool remove_special) const;

    Vocab vocab_;
};

}  // namespace strata::token
