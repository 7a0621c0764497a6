#include "token/tokenizer.hpp"

#include <list>

#include "token/encoders.hpp"
#include "token/unicode.hpp"
#include "util/error.hpp"

namespace strata::token {

namespace {

constexpr std::string_view kSpaceMark = "\xe2\x96\x81";     // U+2581, SentencePiece's space
constexpr std::string_view kUnknownMark = "\xe2\x96\x85";   // U+2585, llama.cpp's <unk> rendering

struct Fragment {
    std::string_view text;  // raw text when token < 0
    int32_t token = -1;
};

// Tokens that encode emits as whole fragments: the text after them got a space prefix.
bool starts_run(TokenType t) { return t == TokenType::control || t == TokenType::user_defined; }

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
            const std::string_view before = it->text.substr(0, at);
            const std::string_view after = it->text.substr(at + special.size());
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
        if (!remove_special) out += text;
        return;
    case TokenType::user_defined:
        out += text;
        return;
    case TokenType::unknown:
        out += kUnknownMark;
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
    if (vocab_.kind == Vocab::Kind::bpe) {
        std::string out;
        for (int32_t t : tokens) append_piece(out, t, remove_special);
        return out;
    }
    // SPM: text runs (normal and byte tokens) are collected first, so that a U+2581 spelled
    // by byte tokens (vocabularies without a "▁" piece) also turns back into a space.
    std::string out, run;

    bool strip = vocab_.add_space_prefix;
    auto flush = [&] {
        std::string text;
        for (size_t pos = 0; pos < run.size();) {
            if (run.compare(pos, kSpaceMark.size(), kSpaceMark) == 0) {
                text += ' ';
                pos += kSpaceMark.size();
            } else {
                text += run[pos++];
            }
        }
        if (text.empty()) return;
        if (strip && text[0] == ' ') text.erase(0, 1);
        strip = false;
        out += text;
        run.clear();
    };
    for (int32_t t : tokens) {
        const TokenType type = vocab_.type[size_t(t)];
        if (type == TokenType::normal) {
            run += vocab_.text[size_t(t)];
        } else if (type == TokenType::byte) {
            run += char(vocab_.byte_value[size_t(t)]);
        } else if (starts_run(type)) {
            flush();
            append_piece(out, t, remove_special);
            strip = vocab_.add_space_prefix;
        } else if (type == TokenType::unknown) {
            // Usually a character the vocabulary cannot spell, inside the text: no prefix follows.
            flush();
            append_piece(out, t, remove_special);
        }  // unused tokens contribute nothing
    }
    flush();
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
