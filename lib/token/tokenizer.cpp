#include "token/tokenizer.hpp"

#include <list>

#include "token/encoders.hpp"
#include "token/unicode.hpp"
#include "util/error.hpp"

namespace strata::token {

namespace {

constexpr std::string_view kSpaceMark = "\xe2\x96\x81";     // U+2581, SentencePiece's space

struct Fragment {
    std::string_view text;  // raw text when token < 0
    int32_t token = -1;
};

// C's isspace, which llama.cpp's lstrip/rstrip use.
bool is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// llama.cpp's clean_spaces on detokenized BPE text: no space before ? ! . , ; " ' " between
// spaces loses both spaces; " 's", " 'm", " 're", " 've" lose their space (" 't", " 'd", " 'll" keep it).
std::string clean_spaces(const std::string& in) {
    std::string a;
    for (size_t i = 0; i < in.size(); ++i) {
        const char x = in[i];
        if (i > 0 && !a.empty() && in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
        a += x;
    }
    std::string b;
    for (size_t i = 0; i < a.size(); ++i) {
        const char x = a[i];
        if (i > 0 && x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
            b.pop_back();
            b += x;
            ++i;  // and the space after it
            continue;
        }
        b += x;
    }
    std::string c;
    for (size_t i = 0; i < b.size(); ++i) {
        const char x = b[i];
        if (i > 0 && b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
            const char x1 = b[i + 1];
            const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
            if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) c.pop_back();
        }
        c += x;
    }
    return c;
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::ModelFile& file) {
    return std::unique_ptr<Tokenizer>(new Tokenizer(Vocab::load(file)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    // Cut the text at special tokens, longest first: each one splits every raw fragment.
    std::list<Fragment> fragments;
    if (!text.empty()) fragments.push_back({text, -1});
    for (int32_t id : vocab_.specials) {
        if (!parse_special && vocab_.type[size_t(id)] != TokenType::user_defined) continue;
        const std::string& special = vocab_.text[size_t(id)];
        for (auto it = fragments.begin(); it != fragments.end(); ++it) {
            if (it->token >= 0) continue;
            const size_t at = it->text.find(special);
            if (at == std::string_view::npos) continue;
            std::string_view before = it->text.substr(0, at);
            std::string_view after = it->text.substr(at + special.size());
            // lstrip / rstrip (llama.cpp's per-token attributes): the token eats adjacent spaces.
            const uint8_t strip = vocab_.strip[size_t(id)];
            if (strip & Vocab::kStripLeft)
                while (!before.empty() && is_c_space(before.back())) before.remove_suffix(1);
            if (strip & Vocab::kStripRight)
                while (!after.empty() && is_c_space(after.front())) after.remove_prefix(1);
            // The remainder stays in *it so that the loop looks at it again.
            if (!before.empty()) fragments.insert(it, {before, -1});
            fragments.insert(it, {{}, id});
            if (after.empty()) {
                it = std::prev(fragments.erase(it));
            } else {
                it->text = after;
                --it;
            }
        }
    }

    std::vector<int32_t> out;
    if (add_special && vocab_.add_bos) out.push_back(vocab_.bos);
    const bool spm = vocab_.kind == Vocab::Kind::spm;
    bool after_special = true;
    std::string normalized;
    for (const Fragment& f : fragments) {
        if (f.token >= 0) {
            out.push_back(f.token);
            after_special = true;
            continue;
        }
        if (spm) {
            normalized.clear();
            if (vocab_.add_space_prefix && after_special) normalized += kSpaceMark;
            for (char c : f.text) {
                if (c == ' ') normalized += kSpaceMark;
                else normalized += c;
            }
            spm_encode(vocab_, normalized, out);
        } else {
            bpe_encode(vocab_, f.text, out);
        }
        after_special = false;
    }
    if (add_special && vocab_.add_eos) out.push_back(vocab_.eos);
    return out;
}

void Tokenizer::check_id(int32_t token) const {
    if (token < 0 || token >= n_vocab())
        fail(Status::invalid_argument, "token id " + std::to_string(token) + " is outside the vocabulary [0, " +
                                           std::to_string(n_vocab()) + ")");
}

void Tokenizer::append_piece(std::string& out, int32_t token, bool remove_special) const {
    const std::string& text = vocab_.text[size_t(token)];
    switch (vocab_.type[size_t(token)]) {
    case TokenType::byte:
        out += char(vocab_.byte_value[size_t(token)]);
        return;
    case TokenType::control:
    case TokenType::unknown:
        if (!remove_special) out += text;
        return;
    case TokenType::user_defined:
        out += text;
        return;
    case TokenType::unused:
        return;
    case TokenType::undefined:
    case TokenType::normal:
        break;
    }
    if (vocab_.kind == Vocab::Kind::spm) {
        for (size_t pos = 0; pos < text.size();) {
            if (text.compare(pos, kSpaceMark.size(), kSpaceMark) == 0) {
                out += ' ';
                pos += kSpaceMark.size();
            } else {
                out += text[pos++];
            }
        }
        return;
    }
    // Byte-level BPE: each character stands for one byte; anything else is kept as written.
    for (size_t pos = 0; pos < text.size();) {
        const CodePoint c = decode_utf8(text, pos);
        const int b = char_to_byte(c.cp);
        if (b >= 0) out += char(b);
        else out.append(text, pos, c.len);
        pos += c.len;
    }
}

std::string Tokenizer::decode(std::span<const int32_t> tokens, bool remove_special) const {
    for (int32_t t : tokens) check_id(t);
    // llama.cpp's llama_detokenize: remove_special drops a leading BOS / trailing EOS that the
    // vocabulary adds and renders no control or unknown token; SPM's prefix space is removed
    // from the first piece only, and not when a BOS was dropped before it.
    bool strip = vocab_.kind == Vocab::Kind::spm && vocab_.add_space_prefix;
    if (remove_special && vocab_.add_bos && !tokens.empty() && tokens.front() == vocab_.bos) {
        strip = false;
        tokens = tokens.subspan(1);
    }
    if (remove_special && vocab_.add_eos && !tokens.empty() && tokens.back() == vocab_.eos)
        tokens = tokens.subspan(0, tokens.size() - 1);

    if (vocab_.kind == Vocab::Kind::bpe) {
        std::string out;
        for (int32_t t : tokens) append_piece(out, t, remove_special);
        return vocab_.pre->clean_spaces() ? clean_spaces(out) : out;
    }
    // SPM: text runs (normal and byte tokens) are collected first, so that in a vocabulary
    // without a "▁" piece (strata-mkmodel's byte-level one) a U+2581 spelled by byte tokens
    // also turns back into a space. Where "▁" is a piece, bytes stay bytes, as in llama.cpp.
    const bool bytes_spell_spaces = vocab_.find(kSpaceMark) < 0;
    std::string out, run;
    auto flush = [&] {
        for (size_t pos = 0; pos < run.size();) {
            if (run.compare(pos, kSpaceMark.size(), kSpaceMark) == 0) {
                out += ' ';
                pos += kSpaceMark.size();
            } else {
                out += run[pos++];
            }
        }
        run.clear();
    };
    for (int32_t t : tokens) {
        const TokenType type = vocab_.type[size_t(t)];
        if (type == TokenType::normal) {
            run += vocab_.text[size_t(t)];
        } else if (type == TokenType::byte && bytes_spell_spaces) {
            run += char(vocab_.byte_value[size_t(t)]);
        } else {
            flush();
            append_piece(out, t, remove_special);
        }
    }
    flush();
    // The first piece's leading space (llama.cpp strips it from the first token's piece only).
    if (strip && !tokens.empty()) {
        const TokenType first = vocab_.type[size_t(tokens.front())];
        if ((first == TokenType::normal || first == TokenType::byte) && !out.empty() && out[0] == ' ') out.erase(0, 1);
    }
    return out;
}

std::string Tokenizer::token_to_piece(int32_t token) const {
    check_id(token);
    std::string out;
    append_piece(out, token, false);
    return out;
}

bool Tokenizer::is_eog(int32_t token) const {
    return token >= 0 && token < n_vocab() && vocab_.eog[size_t(token)];
}

}  // namespace strata::token
