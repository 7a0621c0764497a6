// Parses Jinja source into a Template, following jinja2's grammar (operator precedence, filters
// binding tighter than arithmetic, tests, tuples without parentheses, statement tags).
#pragma once

#include <string_view>

#include "chat/jinja_ast.hpp"

namespace strata::chat {

// Nesting deeper than this (brackets, operators, blocks) is refused rather than risk the stack.
inline constexpr int kMaxParseDepth = 200;

// Throws Status::format "chat template line N: ..." on a syntax error and Status::unsupported
// for a tag jinja2 has and strata does not (extends, block, include, import, autoescape, ...).
Template parse_template(std::string_view source);

}  // namespace strata::chat
