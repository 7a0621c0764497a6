// Tokens of a Jinja template, cut as jinja2's lexer cuts them with trim_blocks and
// lstrip_blocks on: template data, tag delimiters and the expression tokens inside tags.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::chat {

enum class Tok {
    data,            // template text, whitespace control already applied
    variable_begin,  // {{
    variable_end,    // }}
    block_begin,     // {%
    block_end,       // %}
    name,
    string,          // value: the unescaped text
    integer,
    floating,
    op,              // value: the operator text ("+", "//", "(", "|", ...)
    eof,
};

struct Token {
    Tok type;
    std::string value;
    int line = 1;
    int64_t integer = 0;
    double number = 0;
};

// Throws Status::format "chat template line N: ..." for malformed input (unclosed comment or
// string, unbalanced brackets, stray characters, invalid UTF-8).
std::vector<Token> lex_template(std::string_view source);

}  // namespace strata::chat
