// Built-in chat formats: short Jinja sources, written for strata, for models whose GGUF lacks
// tokenizer.chat_template or to override it (strata-run --chat-format NAME).
#pragma once

#include <string_view>

namespace strata::chat {

// The Jinja source of a built-in format, or nullptr when `name` is not one.
const char* builtin_format_source(std::string_view name);
// The names, comma-separated: "chatml,llama3,deepseek3,kimi-k2".
const char* builtin_format_names();

}  // namespace strata::chat
