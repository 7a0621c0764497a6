// Values in and out as Python writes them: str() and repr() of values, json.dumps (what
// jinja2's tojson calls), and JSON text read into values as json.loads does.
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja_value.hpp"

namespace strata::chat {

// Nesting deeper than this in repr, json.dumps or parsed JSON is refused (invalid_argument).
inline constexpr int kMaxValueDepth = 512;

std::string python_str(const Value& v);   // str(v); Undefined prints as ""
std::string python_repr(const Value& v);  // repr(v)
std::string python_float_repr(double d);  // repr(float): 1.0, 0.1, 1e-05, inf
std::string python_string_repr(std::string_view s);

struct JsonDumpOptions {
    bool sort_keys = true;       // jinja2's policy json.dumps_kwargs
    bool ensure_ascii = true;
    int indent = -1;             // -1: None (one line, ", " and ": " separators)
    std::string indent_text;     // indent given as a string (used when non-empty)
};
// json.dumps; throws invalid_argument for values JSON cannot hold (Undefined, namespaces).
std::string json_dumps(const Value& v, const JsonDumpOptions& options);
// jinja2's htmlsafe_json_dumps: json.dumps, then < > & ' as \u003c \u003e \u0026 \u0027.
std::string html_safe_json(const Value& v, const JsonDumpOptions& options);

// json.loads; `what` names the text in errors ("messages_json"). invalid_argument on bad JSON.
Value parse_json(std::string_view text, const char* what);

}  // namespace strata::chat
