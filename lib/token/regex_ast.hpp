// Internals of token/regex.hpp: the syntax tree the parser builds and the compiler lowers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "token/regex_program.hpp"

namespace strata::token::regex_detail {

struct Node {
    enum class Kind : uint8_t {
        empty,       // matches the empty string
        literal,     // value: the code point (fold: compare lowercased)
        char_class,  // value: index into Parsed::classes
        concat,      // children in order
        alternate,   // children by priority
        repeat,      // children[0] repeated min..max times (max == kUnbounded: no limit)
        assertion,   // value: Op::line_start, line_end, word_boundary or not_word_boundary
        lookahead,   // children[0] must (or, negated, must not) match from here
    };
    static constexpr uint32_t kUnbounded = UINT32_MAX;

    Kind kind = Kind::empty;
    uint32_t value = 0;
    bool fold = false;
    bool greedy = true;
    bool negated = false;
    uint32_t min = 0, max = 0;
    size_t offset = 0;  // in the pattern, in bytes, for messages
    std::vector<Node> children = {};
};

struct Parsed {
    Node root;
    std::vector<CharClass> classes;  // finished
};

// Throws strata::Error: Status::invalid_argument for a malformed pattern, Status::unsupported
// for syntax this engine does not implement; both name the byte offset.
Parsed parse_pattern(std::string_view pattern_utf8);

}  // namespace strata::token::regex_detail
