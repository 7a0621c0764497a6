// The vocabulary of a GGUF model (tokenizer.ggml.*), read and checked once; shared by the
// SentencePiece-style and the byte-level BPE tokenizers.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "token/pretokenize.hpp"

namespace strata::gguf {
class ModelFile;
}

namespace strata::token {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class TokenType : uint8_t {
    undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TextMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct Vocab {
    enum class Kind { spm, bpe };
    Kind kind = Kind::spm;

    std::vector<std::string> text;   // per token
    std::vector<float> score;        // per token (0 when the file has no scores)
    std::vector<TokenType> type;     // per token
    std::vector<int16_t> byte_value; // per token: the byte of a <0xNN> byte token, else -1
    TextMap ids;                     // text -> id; a repeated text maps to its last id

    int32_t bos = -1, eos = -1, unk = -1, pad = -1, eot = -1, eom = -1;
    bool add_bos = false, add_eos = false;
    bool add_space_prefix = true;    // SPM only

    std::array<int32_t, 256> byte_token{};  // SPM: id of "<0xNN>", -1 when absent

    std::shared_ptr<const PreTokenizer> pre;  // BPE only
    // BPE merges: by token ids (merge_id_key) when both sides are tokens, else by text.
    std::unordered_map<uint64_t, int32_t> merge_rank_by_id;
    TextMap merge_rank;                       // merge_key(left, right) -> rank

    // llama.cpp's per-token lstrip/rstrip (set by model name, e.g. Phi-3's special tokens):
    // the whitespace before / after a special token matched in the text is dropped.
    std::vector<uint8_t> strip;  // per token: kStripLeft | kStripRight
    static constexpr uint8_t kStripLeft = 1, kStripRight = 2;

    // Tokens matched in text before normal tokenization, longest text first (ties: lower id).
    std::vector<int32_t> specials;
    std::vector<bool> eog;

    int32_t find(std::string_view piece) const {
        auto it = ids.find(piece);
        return it == ids.end() ? -1 : it->second;
    }
    int32_t n_vocab() const { return int32_t(text.size()); }

    static Vocab load(const gguf::ModelFile& file);
};

// Key of a merge pair that cannot collide whatever bytes the pieces hold.
std::string merge_key(std::string_view left, std::string_view right);
inline uint64_t merge_id_key(int32_t left, int32_t right) { return uint64_t(uint32_t(left)) << 32 | uint32_t(right); }

}  // namespace strata::token
