#include "report/json_io.hpp"

namespace strata::report {

namespace {

// Maximum bracket depth outside strings; stops counting once past the limit.
int bracket_depth(std::string_view text) {
    int depth = 0, max_depth = 0;
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '[' || c == '{') {
            if (++depth > max_depth) max_depth = depth;
            if (max_depth > kMaxJsonDepth) return max_depth;
        } else if (c == ']' || c == '}') --depth;
    }
    return max_depth;
}

}  // namespace

std::optional<nlohmann::json> parse_untrusted_json(std::string_view text, std::string* error) {
    if (bracket_depth(text) > kMaxJsonDepth) {
        if (error) *error = "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
        return std::nullopt;
    }
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        if (error) *error = std::string("not valid JSON: ") + e.what();
        return std::nullopt;
    }
}

const char* json_type_word(const nlohmann::json& v) {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "boolean";
    if (v.is_number_integer()) return "integer";
    if (v.is_number()) return "number";
    if (v.is_string()) return "string";
    if (v.is_array()) return "array";
    return "object";
}

}  // namespace strata::report
