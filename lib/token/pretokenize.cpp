#include "token/pretokenize.hpp"

#include <cctype>

#include "token/unicode.hpp"

namespace strata::token {

namespace {

enum class Cls : uint8_t { letter, number, space, other };

struct Char {
    uint32_t cp;
    size_t pos;  // byte offset in the text
    Cls cls;
};

std::vector<Char> classify(std::string_view text) {
    std::vector<Char> out;
    for (size_t pos = 0; pos < text.size();) {
        const CodePoint c = decode_utf8(text, pos);
        const Cls cls = is_letter(c.cp) ? Cls::letter : is_number(c.cp) ? Cls::number
                        : is_whitespace(c.cp) ? Cls::space : Cls::other;
        out.push_back({c.cp, pos, cls});
        pos += c.len;
    }
    return out;
}

uint32_t lower_ascii(uint32_t cp) { return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp; }

// Length in characters of a contraction ('s 't 're 've 'm 'll 'd) at i, or 0.
size_t contraction(const std::vector<Char>& c, size_t i, bool ignore_case) {
    if (c[i].cp != '\'' || i + 1 >= c.size()) return 0;
    auto at = [&](size_t k) -> uint32_t {
        if (k >= c.size()) return 0;
        return ignore_case ? lower_ascii(c[k].cp) : c[k].cp;
    };
    const uint32_t a = at(i + 1), b = at(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

size_t run_of(const std::vector<Char>& c, size_t i, Cls cls) {
    size_t j = i;
    while (j < c.size() && c[j].cls == cls) ++j;
    return j;
}

bool is_newline(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// \s+(?!\S) then \s+ : a whitespace run, less its last character when a non-space follows
// (that character then joins the next word as its optional leading space).
size_t whitespace_word(const std::vector<Char>& c, size_t i) {
    const size_t end = run_of(c, i, Cls::space);
    if (end == c.size() || end - i == 1) return end;
    return end - 1;
}

// Each returns the end (in characters) of the word starting at i; always > i.
size_t gpt2_word(const std::vector<Char>& c, size_t i) {
    if (size_t n = contraction(c, i, false)) return i + n;
    const bool space_then = c[i].cp == ' ' && i + 1 < c.size();
    for (Cls cls : {Cls::letter, Cls::number, Cls::other}) {
        if (c[i].cls == cls) return run_of(c, i, cls);
        if (space_then && c[i + 1].cls == cls) return run_of(c, i + 1, cls);
    }
    return whitespace_word(c, i);
}

size_t qwen2_word(const std::vector<Char>& c, size_t i) {
    if (size_t n = contraction(c, i, true)) return i + n;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (c[i].cls == Cls::letter) return run_of(c, i, Cls::letter);
    if (c[i].cls != Cls::number && !is_newline(c[i].cp) && i + 1 < c.size() && c[i + 1].cls == Cls::letter)
        return run_of(c, i + 1, Cls::letter);
    // \p{N}
    if (c[i].cls == Cls::number) return i + 1;
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    size_t start = c[i].cp == ' ' && i + 1 < c.size() && c[i + 1].cls == Cls::other ? i + 1 : i;
    if (c[start].cls == Cls::other) {
        size_t j = run_of(c, start, Cls::other);
        while (j < c.size() && is_newline(c[j].cp)) ++j;
        return j;
    }
    // \s*[\r\n]+ : up to and including the last newline of the whitespace run.
    const size_t end = run_of(c, i, Cls::space);
    for (size_t j = end; j > i; --j)
        if (is_newline(c[j - 1].cp)) return j;
    return whitespace_word(c, i);
}

// Cuts c (the characters of text from byte offset c[0].pos on, up to text_end) with word().
template <typename WordFn>
void cut(const std::vector<Char>& c, std::string_view text, size_t text_end, const WordFn& word,
         std::vector<std::string_view>& words) {
    for (size_t i = 0; i < c.size();) {
        const size_t j = word(c, i);
        const size_t begin = c[i].pos, end = j < c.size() ? c[j].pos : text_end;
        words.push_back(text.substr(begin, end - begin));
        i = j;
    }
}

// smollm (llama.cpp's \p{N} then the GPT-2 pattern): every digit is a word of its own, and the
// GPT-2 pattern cuts each stretch between digits as if it were the whole text.
void digits_then_gpt2(const std::vector<Char>& c, std::string_view text, std::vector<std::string_view>& words) {
    std::vector<Char> stretch;
    for (size_t i = 0; i <= c.size(); ++i) {
        if (i < c.size() && c[i].cls != Cls::number) {
            stretch.push_back(c[i]);
            continue;
        }
        const size_t stretch_end = i < c.size() ? c[i].pos : text.size();
        cut(stretch, text, stretch_end, gpt2_word, words);
        stretch.clear();
        if (i < c.size()) {
            const size_t end = i + 1 < c.size() ? c[i + 1].pos : text.size();
            words.push_back(text.substr(c[i].pos, end - c[i].pos));
        }
    }
}

}  // namespace

std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text) {
    const std::vector<Char> c = classify(text);
    std::vector<std::string_view> words;
    switch (kind) {
        case PreTokenizer::gpt2: cut(c, text, text.size(), gpt2_word, words); break;
        case PreTokenizer::qwen2: cut(c, text, text.size(), qwen2_word, words); break;
        case PreTokenizer::smollm: digits_then_gpt2(c, text, words); break;
    }
    return words;
}

}  // namespace strata::token
