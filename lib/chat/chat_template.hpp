// The chat-template entry point: renders a conversation with a Jinja chat template (the
// model's tokenizer.chat_template, a built-in format or the caller's source) as the Python
// jinja2 package renders it for Hugging Face (trim_blocks, lstrip_blocks, loop controls,
// raise_exception, strftime_now).
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja_eval.hpp"

namespace strata::chat {

struct ChatRequest {
    std::string_view template_source;  // Jinja source (not a format name: see resolve in capi)
    std::string_view messages_json;    // a JSON array of message objects
    bool add_generation_prompt = true;
    std::string bos_token;             // "" when the vocabulary has none
    std::string eos_token;
    std::string_view extra_json;       // "" or a JSON object of more variables
    RenderLimits limits;
};

// Errors: invalid_argument for malformed JSON, messages that are not an array, extra_json that
// is not an object, raise_exception and runtime type errors; format for a syntax error;
// unsupported for a Jinja feature strata does not implement.
std::string apply_chat_template(const ChatRequest& request);

}  // namespace strata::chat
