// The Unicode facts the tokenizers need: UTF-8 decoding that never fails, a compact
// letter/number/whitespace classification, and GPT-2's byte <-> character mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::token {

struct CodePoint {
    uint32_t cp;   // U+FFFD for a byte that does not start a valid sequence
    size_t len;    // bytes consumed, 1..4 (an invalid byte is consumed alone)
};

// Decodes the code point starting at text[pos] (pos < text.size()).
CodePoint decode_utf8(std::string_view text, size_t pos);

// Bytes of the UTF-8 sequence announced by a lead byte (1 for continuation/invalid bytes),
// without checking what follows; SentencePiece splits its input this way.
size_t utf8_sequence_length(uint8_t lead);

void append_utf8(std::string& out, uint32_t cp);

// \p{L}, \p{N} and \s as the pre-tokenizer regexes use them. Letters and numbers come from
// a table of ranges for the common scripts (Latin, Greek, Cyrillic, Armenian, Hebrew,
// Arabic, Indic, Thai, Georgian, Hangul, kana, CJK, full-width forms); code points outside
// the table count as neither (like punctuation), and combining marks are not letters.
bool is_letter(uint32_t cp);
bool is_number(uint32_t cp);
bool is_whitespace(uint32_t cp);

// GPT-2 byte-level BPE: every byte is shown as one printable character (printable Latin-1
// bytes as themselves, the rest as U+0100 onwards in byte order).
uint32_t byte_to_char(uint8_t byte);
// The byte a character stands for, or -1 when it is not one of the 256 characters.
int char_to_byte(uint32_t cp);

}  // namespace strata::token
