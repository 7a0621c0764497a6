// Python's operators on template values (arithmetic, comparison, `in`, indexing, slicing,
// iteration, attribute lookup as jinja2's Environment.getattr/getitem do it), HTML escaping,
// and a reader for builtin arguments.
#pragma once

#include <string>
#include <vector>

#include "chat/jinja_value.hpp"

namespace strata::chat {

class Interpreter;

// Throws jinja2's UndefinedError for an operation on an Undefined (invalid_argument).
[[noreturn]] void undefined_error(const Value& u, int line);

Value binary_op(Interpreter& in, const std::string& op, const Value& a, const Value& b, int line);
Value negate(const Value& v, int line, bool minus);
// a < b as Python orders values (numbers, str by code point, lists lexicographically).
bool less_than(const Value& a, const Value& b, int line);
bool compare_op(const std::string& op, const Value& a, const Value& b, int line);
bool contains(const Value& container, const Value& item, int line);

// Iterating a value as a for loop does (dict: keys; str: characters; Undefined: nothing).
std::vector<Value> iterate(const Value& v, int line);
// len(v); Undefined: 0.
int64_t length_of(const Value& v, int line);

Value get_attr(const Value& obj, const std::string& name, int line);
Value get_item(const Value& obj, const Value& key, int line);
Value slice_of(const Value& obj, const Value& start, const Value& stop, const Value& step, int line);

// markupsafe.escape: & < > ' " as entities.
std::string escape_html(std::string_view s);
// The text of a value as printed, with Markup's rules when `v` is joined to Markup.
std::string to_text(const Value& v);

// Python string formatting, "%s" % args.
std::string percent_format(const std::string& fmt, const Value& args, int line);

// Positional-or-keyword arguments of a builtin, as Python binds them; leftovers are an error.
class ArgReader {
public:
    ArgReader(CallArgs& args, std::string what) : args_(args), what_(std::move(what)) {}
    // The argument at `index` or named `name`; nullptr when absent.
    const Value* get(size_t index, const char* name);
    Value get_or(size_t index, const char* name, Value fallback);
    // Extra positional arguments from `index` on (for *args builtins).
    std::vector<Value> rest(size_t index);
    void done();  // throws when an argument was not consumed

private:
    CallArgs& args_;
    std::string what_;
    size_t used_positional_ = 0;
    std::vector<bool> used_keyword_;
};

}  // namespace strata::chat
