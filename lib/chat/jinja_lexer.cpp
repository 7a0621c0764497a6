#include "chat/jinja_lexer.hpp"

#include <cstdlib>
#include <limits>

#include "chat/jinja_error.hpp"
#include "chat/jinja_value.hpp"

namespace strata::chat {

namespace {

// Python's \s for the characters a template holds (ASCII whitespace; Unicode spaces are rare
// enough in templates to be treated as text).
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || (len == 2 && c < 0xC2) || i + len > s.size()) return false;
        for (size_t k = 1; k < len; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        if (len == 3) {
            unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
            if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) return false;
        }
        if (len == 4) {
            unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
            if ((c == 0xF0 && c1 < 0x90) || c > 0xF4 || (c == 0xF4 && c1 >= 0x90)) return false;
        }
        i += len;
    }
    return true;
}

// jinja2 splits the source on \r\n, \r and \n, joins with \n and drops one trailing newline
// (keep_trailing_newline=False).
std::string normalize_newlines(std::string_view src) {
    std::string out;
    out.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
        if (src[i] == '\r') {
            out += '\n';
            if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
        } else {
            out += src[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Python's unicode-escape decoding of a string literal's body.
std::string unescape(std::string_view body, int line) {
    std::string out;
    for (size_t i = 0; i < body.size(); ++i) {
        char c = body[i];
        if (c != '\\' || i + 1 >= body.size()) {
            out += c;
            continue;
        }
        char e = body[++i];
        switch (e) {
            case '\n': break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'v': out += '\v'; break;
            case 'x':
            case 'u':
            case 'U': {
                const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                uint32_t cp = 0;
                for (size_t k = 0; k < digits; ++k) {
                    int h = i + 1 + k < body.size() ? hex_value(body[i + 1 + k]) : -1;
                    if (h < 0) syntax_error(line, std::string("truncated \\") + e + " escape in a string literal");
                    cp = cp * 16 + static_cast<uint32_t>(h);
                }
                if (cp > 0x10FFFF) syntax_error(line, "illegal Unicode character in a string literal");
                if (cp >= 0xD800 && cp <= 0xDFFF)
                    unsupported_error(line, "a surrogate code point in a string literal is not supported");
                utf8_append(out, cp);
                i += digits;
                break;
            }
            case 'N': unsupported_error(line, "\\N{...} escapes in string literals are not supported");
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t cp = static_cast<uint32_t>(e - '0');
                    for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
                        cp = cp * 8 + static_cast<uint32_t>(body[++i] - '0');
                    utf8_append(out, cp);
                } else {
                    out += '\\';  // Python keeps unknown escapes as written
                    out += e;
                }
        }
    }
    return out;
}

int count_newlines(std::string_view s, size_t from, size_t to) {
    int n = 0;
    for (size_t i = from; i < to; ++i) n += s[i] == '\n';
    return n;
}

class Lexer {
public:
    explicit Lexer(std::string src) : s_(std::move(src)) {}

    std::vector<Token> run() {
        while (pos_ < s_.size()) root();
        push(Tok::eof, "");
        return std::move(tokens_);
    }

private:
    std::string s_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;  // the last match ended with a newline (jinja2's lstrip rule)
    std::vector<Token> tokens_;

    void push(Tok t, std::string v) { tokens_.push_back(Token{t, std::move(v), line_, 0, 0}); }

    bool at(size_t p, std::string_view lit) const { return s_.compare(p, lit.size(), lit) == 0; }

    // The text before a tag, with `-` (strip all whitespace) or lstrip_blocks applied.
    void emit_text(size_t from, size_t to, char sign, bool lstrip_allowed) {
        std::string_view text(s_.data() + from, to - from);
        size_t keep = text.size();
        if (sign == '-') {
            while (keep > 0 && is_space(text[keep - 1])) --keep;
        } else if (sign != '+' && lstrip_allowed) {
            size_t nl = text.rfind('\n');
            size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
            if (l_pos > 0 || line_starting_) {
                bool all_space = l_pos < text.size();
                for (size_t i = l_pos; i < text.size(); ++i)
                    if (!is_space(text[i])) all_space = false;
                if (all_space) keep = l_pos;
            }
        }
        if (keep > 0) push(Tok::data, std::string(text.substr(0, keep)));
        line_ += count_newlines(s_, from, to);
    }

    // After a block or comment end: `-` strips the whitespace after, `+` keeps it, and
    // trim_blocks drops one newline.
    void block_suffix(char sign) {
        if (sign == '-') {
            size_t start = pos_;
            while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
            line_ += count_newlines(s_, start, pos_);
            line_starting_ = pos_ > start ? s_[pos_ - 1] == '\n' : false;
        } else if (sign != '+' && pos_ < s_.size() && s_[pos_] == '\n') {
            ++pos_;
            ++line_;
            line_starting_ = true;
        } else {
            line_starting_ = false;
        }
    }

    void root() {
        size_t p = s_.find('{', pos_);
        while (p != std::string::npos && p + 1 < s_.size() && s_[p + 1] != '{' && s_[p + 1] != '%' && s_[p + 1] != '#')
            p = s_.find('{', p + 1);
        if (p == std::string::npos || p + 1 >= s_.size()) {
            emit_text(pos_, s_.size(), 0, false);
            pos_ = s_.size();
            return;
        }
        const char kind = s_[p + 1];
        const char sign = p + 2 < s_.size() && (s_[p + 2] == '-' || s_[p + 2] == '+') ? s_[p + 2] : 0;
        const size_t after = p + 2 + (sign ? 1 : 0);
        if (kind == '%' && raw_begin(p, sign, after)) return;
        emit_text(pos_, p, sign, kind != '{');
        pos_ = after;
        line_starting_ = false;
        if (kind == '#') comment();
        else tag(kind == '%');
    }

    // {% raw %} ... {% endraw %}: the text between is data, untouched.
    bool raw_begin(size_t p, char sign, size_t after) {
        size_t q = after;
        while (q < s_.size() && is_space(s_[q])) ++q;
        if (!at(q, "raw")) return false;
        q += 3;
        if (q < s_.size() && is_name_char(s_[q])) return false;
        while (q < s_.size() && is_space(s_[q])) ++q;
        bool strip_after = false;
        if (at(q, "-%}")) {
            strip_after = true;
            q += 3;
        } else if (at(q, "%}")) {
            q += 2;
        } else {
            return false;
        }
        emit_text(pos_, p, sign, true);
        line_ += count_newlines(s_, p, q);
        if (strip_after)
            while (q < s_.size() && is_space(s_[q])) line_ += s_[q++] == '\n';
        line_starting_ = q > 0 && s_[q - 1] == '\n';
        // Find {%[-+]? endraw [-+]?%}.
        for (size_t e = s_.find("{%", q); e != std::string::npos; e = s_.find("{%", e + 1)) {
            char esign = e + 2 < s_.size() && (s_[e + 2] == '-' || s_[e + 2] == '+') ? s_[e + 2] : 0;
            size_t r = e + 2 + (esign ? 1 : 0);
            while (r < s_.size() && is_space(s_[r])) ++r;
            if (!at(r, "endraw")) continue;
            r += 6;
            while (r < s_.size() && is_space(s_[r])) ++r;
            char close = 0;
            if (at(r, "+%}") || at(r, "-%}")) {
                close = s_[r];
                r += 3;
            } else if (at(r, "%}")) {
                r += 2;
            } else {
                continue;
            }
            emit_text(q, e, esign, true);
            line_ += count_newlines(s_, e, r);
            pos_ = r;
            block_suffix(close);
            return true;
        }
        syntax_error(line_, "Missing end of raw directive");
    }

    void comment() {
        for (size_t e = s_.find("#}", pos_); e != std::string::npos; e = s_.find("#}", e + 1)) {
            char sign = e > pos_ && (s_[e - 1] == '-' || s_[e - 1] == '+') ? s_[e - 1] : 0;
            line_ += count_newlines(s_, pos_, e + 2);
            pos_ = e + 2;
            block_suffix(sign);
            return;
        }
        syntax_error(line_, "Missing end of comment tag");
    }

    void tag(bool block) {
        push(block ? Tok::block_begin : Tok::variable_begin, "");
        std::vector<char> balance;
        while (true) {
            // The end delimiter counts only with the brackets balanced (jinja2's rule).
            if (balance.empty()) {
                if (block) {
                    if (at(pos_, "+%}") || at(pos_, "-%}") || at(pos_, "%}")) {
                        char sign = s_[pos_] == '%' ? 0 : s_[pos_];
                        pos_ += sign ? 3 : 2;
                        push(Tok::block_end, "");
                        block_suffix(sign);
                        return;
                    }
                } else if (at(pos_, "-}}") || at(pos_, "}}")) {
                    bool strip = s_[pos_] == '-';
                    pos_ += strip ? 3 : 2;
                    push(Tok::variable_end, "");
                    if (strip) block_suffix('-');
                    else line_starting_ = false;
                    return;
                }
            }
            if (pos_ >= s_.size())
                syntax_error(line_, std::string("unexpected end of template, the ") + (block ? "block" : "variable") +
                                        " tag opened here is never closed");
            char c = s_[pos_];
            if (is_space(c)) {
                line_ += c == '\n';
                ++pos_;
                continue;
            }
            if (is_digit(c)) {
                number();
                continue;
            }
            if (is_name_start(c)) {
                size_t start = pos_;
                while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
                push(Tok::name, s_.substr(start, pos_ - start));
                continue;
            }
            if (c == '\'' || c == '"') {
                string_literal(c);
                continue;
            }
            op(balance);
        }
    }

    void number() {
        size_t start = pos_;
        auto digits = [&]() {
            while (pos_ < s_.size() && (is_digit(s_[pos_]) || (s_[pos_] == '_' && pos_ + 1 < s_.size() && is_digit(s_[pos_ + 1]))))
                ++pos_;
        };
        if (s_[pos_] == '0' && pos_ + 1 < s_.size() && (s_[pos_ + 1] == 'x' || s_[pos_ + 1] == 'X' || s_[pos_ + 1] == 'o' ||
                                                      s_[pos_ + 1] == 'O' || s_[pos_ + 1] == 'b' || s_[pos_ + 1] == 'B'))
            unsupported_error(line_, "hexadecimal, octal and binary integer literals are not supported");
        digits();
        bool is_float = false;
        if (pos_ + 1 < s_.size() && s_[pos_] == '.' && is_digit(s_[pos_ + 1])) {
            ++pos_;
            digits();
            is_float = true;
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            size_t q = pos_ + 1;
            if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
            if (q < s_.size() && is_digit(s_[q])) {
                pos_ = q;
                digits();
                is_float = true;
            }
        }
        std::string text;
        for (size_t i = start; i < pos_; ++i)
            if (s_[i] != '_') text += s_[i];
        Token t{is_float ? Tok::floating : Tok::integer, text, line_, 0, 0};
        if (is_float) {
            t.number = std::strtod(text.c_str(), nullptr);
        } else {
            if (text.size() > 1 && text[0] == '0' && text.find_first_not_of('0') != std::string::npos)
                syntax_error(line_, "leading zeros in decimal integer literals are not permitted");
            errno = 0;
            long long v = std::strtoll(text.c_str(), nullptr, 10);
            if (errno == ERANGE) unsupported_error(line_, "the integer literal " + text + " does not fit 64 bits");
            t.integer = v;
        }
        tokens_.push_back(std::move(t));
    }

    void string_literal(char quote) {
        size_t start = pos_++;
        while (pos_ < s_.size() && s_[pos_] != quote) {
            if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
            ++pos_;
        }
        if (pos_ >= s_.size()) syntax_error(line_, "unexpected end of template inside a string literal");
        ++pos_;
        std::string body = unescape(std::string_view(s_).substr(start + 1, pos_ - start - 2), line_);
        push(Tok::string, std::move(body));
        line_ += count_newlines(s_, start, pos_);
    }

    void op(std::vector<char>& balance) {
        static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
        for (const char* t : two)
            if (at(pos_, t)) {
                push(Tok::op, t);
                pos_ += 2;
                return;
            }
        const char c = s_[pos_];
        static const std::string_view singles = "+-/*%~[](){}><=.:|,;";
        if (singles.find(c) == std::string_view::npos) {
            std::string shown = c >= 0x20 && c < 0x7F ? std::string(1, c) : "\\x" + std::to_string(static_cast<unsigned char>(c));
            syntax_error(line_, "unexpected char '" + shown + "'");
        }
        if (c == '(' || c == '[' || c == '{') balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
        if (c == ')' || c == ']' || c == '}') {
            if (balance.empty()) syntax_error(line_, std::string("unexpected '") + c + "'");
            if (balance.back() != c)
                syntax_error(line_, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
            balance.pop_back();
        }
        push(Tok::op, std::string(1, c));
        ++pos_;
    }
};

}  // namespace

std::vector<Token> lex_template(std::string_view source) {
    if (!valid_utf8(source)) syntax_error(1, "the template is not valid UTF-8");
    return Lexer(normalize_newlines(source)).run();
}

}  // namespace strata::chat
