// The builtins of the interpreter: Python methods of str/list/dict (jinja_methods.cpp),
// jinja2's filters (jinja_filters.cpp) and tests (jinja_tests.cpp), and the Python string
// operations they share (jinja_strings.cpp), all counting by code point as Python does.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_value.hpp"

namespace strata::chat {

class Interpreter;

// getattr(obj, name) for the Python attributes of obj (str.split, dict.get, list.append, a
// namespace's fields, loop.index, ...): true and `out` set when obj has it.
bool python_attribute(const Value& obj, const std::string& name, Value& out);

bool filter_known(const std::string& name);      // strata implements it
bool filter_in_jinja2(const std::string& name);  // jinja2 has it (strata may not implement it)
Value run_filter(Interpreter& in, const std::string& name, const Value& subject, CallArgs& args);
bool test_known(const std::string& name);
bool run_test(Interpreter& in, const std::string& name, const Value& subject, CallArgs& args);

// --- Python str operations ---
bool py_isspace(uint32_t cp);
std::string py_lower(std::string_view s);
std::string py_upper(std::string_view s);
std::string py_capitalize(std::string_view s);
std::string py_title(std::string_view s);  // str.title
// strip/lstrip/rstrip; chars: nullopt -> whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// split/rsplit; sep nullopt -> runs of whitespace.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right, int line);
std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);

}  // namespace strata::chat
