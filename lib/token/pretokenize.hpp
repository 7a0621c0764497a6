// Pre-tokenizers of byte-level BPE: the regex that cuts text into words before merging,
// written out by hand (no std::regex) for the patterns strata supports.
#pragma once

#include <string_view>
#include <vector>

namespace strata::token {

enum class PreTokenizer {
    gpt2,   // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    qwen2,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*
            // |\s*[\r\n]+|\s+(?!\S)|\s+
    smollm, // \p{N}, then gpt2's pattern on the text between digits (llama.cpp's smollm, starcoder,
            // refact, command-r)
};

// The words of `text` in order; they concatenate to `text`. Bytes that are not valid UTF-8
// are classified as "other" (neither letter, number nor space).
std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text);

}  // namespace strata::token
