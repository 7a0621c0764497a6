// The two merge algorithms, applied to one fragment of text without special tokens.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "token/vocab.hpp"

namespace strata::token {

// SentencePiece-style: `text` is already normalized (spaces shown as U+2581). Appends ids.
void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

// Byte-level BPE: pre-tokenizes `text`, maps bytes to characters and merges by rank.
void bpe_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

}  // namespace strata::token
