// Errors of the Jinja interpreter, all naming the template line they come from.
#pragma once

#include <string>

#include "util/error.hpp"

namespace strata::chat {

// A syntax error: Status::format "chat template line N: ...".
[[noreturn]] inline void syntax_error(int line, const std::string& message) {
    fail(Status::format, "chat template line " + std::to_string(line) + ": " + message);
}
// A construct jinja2 has and strata does not: Status::unsupported.
[[noreturn]] inline void unsupported_error(int line, const std::string& message) {
    fail(Status::unsupported, "chat template line " + std::to_string(line) + ": " + message);
}
// What jinja2 raises while rendering (TypeError, UndefinedError, ...): Status::invalid_argument.
[[noreturn]] inline void runtime_error(int line, const std::string& message) {
    fail(Status::invalid_argument, "chat template line " + std::to_string(line) + ": " + message);
}

}  // namespace strata::chat
