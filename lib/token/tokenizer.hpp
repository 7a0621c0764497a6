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
//  * "gpt2" -> "bpe": byte-level BPE with the pre-tokenizer named by tokenizer.ggml.pre (every
//    name of the families strata runs, token/pretokenize.hpp; an unknown name is refused naming
//    the supported ones). As llama.cpp, bytes that are not valid UTF-8 become U+FFFD first.
//
// Special tokens (llama.cpp's tokenizer_st_partition): user-defined tokens (type 4) are always
// matched in the text; control (3) and unknown (2) tokens only when parse_special is true,
// otherwise their text is tokenized like any other text. Longer texts are matched first. Tokens
// llama.cpp takes as the end of generation by their text (<|im_end|>, <|eot_id|>, [EOS], ...)
// become control tokens, as llama.cpp makes them, and lstrip/rstrip apply where llama.cpp sets
// them by model name (Phi-3).
//
// Decoding follows llama.cpp's llama_detokenize with unparse_special = !remove_special: normal
// tokens give their text (SPM: U+2581 -> space; BPE: characters -> bytes), byte tokens their
// byte, user-defined tokens their text, control and unknown tokens their text unless
// remove_special (which also drops a leading BOS / trailing EOS the vocabulary adds), unused
// tokens nothing. SPM with add_space_prefix removes one leading space from the first piece
// (not after a dropped BOS). BPE vocabularies with llama.cpp's clean_spaces (gpt-2, llama-bpe,
// falcon, mpt, starcoder, refact, default) drop the space before ? ! . , and some contractions,
// so decode(encode(t)) may differ from t exactly where llama.cpp's does. token_to_piece never
// strips or cleans. In an SPM vocabulary without a "▁" piece (strata-mkmodel's byte-level one
// spells it <0xE2><0x96><0x81>), decode also turns a U+2581 spelled by byte tokens back into a
// space; llama.cpp keeps those bytes, as strata does where "▁" is a piece.
//
// Limits: no Unicode normalization (NFC/NFKC) is applied (llama.cpp applies none for these
// tokenizers either).
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

    // End of generation as llama.cpp decides it: eos, eot, eom, and the tokens whose text ends a
    // turn in the chat formats llama.cpp knows (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>,
    // <|endoftext|>, [EOS], [EOT], <｜end▁of▁sentence｜>, ...).
    bool is_eog(int32_t token) const;

    std::string_view type_name() const { return vocab_.kind == Vocab::Kind::spm ? "spm" : "bpe"; }

    const Vocab& vocab() const { return vocab_; }

    // Throws strata::Error(invalid_argument) naming an id outside [0, n_vocab).
    void check_id(int32_t token) const;

private:
    explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
    // Appends the bytes a token contributes on its own (SPM normal pieces: U+2581 -> space).
    void append_piece(std::string& out, int32_t token, bool remove_special) const;

    Vocab vocab_;
};

}  // namespace strata::token
