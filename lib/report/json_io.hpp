// Parsing JSON that came from outside (report files read back for compare or rendering): depth
// is bounded before nlohmann's recursive parser sees the text, and errors come back as text.
// Also what the report writers share to build JSON.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace strata::report {

// Deeper nesting than any report has; refused before parsing so that a hostile file cannot
// exhaust the stack.
inline constexpr int kMaxJsonDepth = 64;

// The parsed document, or nullopt with *error set (syntax error with its byte offset, nesting
// too deep, invalid UTF-8 in a string).
std::optional<nlohmann::json> parse_untrusted_json(std::string_view text, std::string* error);

// The value, or JSON null when there is none (a figure that was not measured).
template <typename T>
nlohmann::json or_null(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The value's JSON type in the words the schema uses ("object", "integer", "number", ...).
const char* json_type_word(const nlohmann::json& value);

}  // namespace strata::report
