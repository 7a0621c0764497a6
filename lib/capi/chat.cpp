// strata_chat_apply_template, strata_chat_builtin_formats: chat templates (lib/chat).
#include <cstring>
#include <string>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "chat/builtin_formats.hpp"
#include "chat/chat_template.hpp"

using strata::Status;
using strata::fail;
using strata::capi::require;
using strata::capi::tokenizer_of;

namespace {

// The text of a special token, "" when the vocabulary has none.
std::string token_text(const strata::token::Tokenizer& tok, int32_t id) {
    const auto& text = tok.vocab().text;
    return id >= 0 && static_cast<size_t>(id) < text.size() ? text[static_cast<size_t>(id)] : std::string();
}

// The model's tokenizer.chat_template; not_found naming the model when it has none.
std::string model_template(const strata_model* model) {
    const auto& file = strata::capi::file_of(model);
    auto index = file.find_key("tokenizer.chat_template");
    std::string name = file.shards().empty() ? std::string("the model") : "'" + file.shards()[0].path + "'";
    if (!index)
        fail(Status::not_found, name + " has no chat template (metadata key tokenizer.chat_template): pass a "
                                       "template or a built-in format (" + strata::chat::builtin_format_names() + ")");
    auto text = file.metadata_value(*index).as_string();
    if (!text) fail(Status::type_mismatch, "the metadata key tokenizer.chat_template of " + name + " is not a string");
    return std::string(*text);
}

}  // namespace

extern "C" {

strata_status strata_chat_apply_template(strata_model* model, const char* template_source, const char* messages_json,
                                         int add_generation_prompt, const char* extra_json, char* text,
                                         size_t capacity, size_t* out_length) {
    STRATA_API_BEGIN
    require(model, "model");
    require(messages_json, "messages_json");
    require(out_length, "out_length");
    std::string source;
    if (!template_source) source = model_template(model);
    else if (const char* builtin = strata::chat::builtin_format_source(template_source)) source = builtin;
    else source = template_source;
    const auto& tok = *tokenizer_of(model);
    strata::chat::ChatRequest request;
    request.template_source = source;
    request.messages_json = messages_json;
    request.add_generation_prompt = add_generation_prompt != 0;
    request.bos_token = token_text(tok, tok.bos());
    request.eos_token = token_text(tok, tok.eos());
    if (extra_json) request.extra_json = extra_json;
    const std::string rendered = strata::chat::apply_chat_template(request);
    *out_length = rendered.size();
    if (capacity < rendered.size())
        fail(Status::buffer_too_small, "the rendered conversation needs " + std::to_string(rendered.size()) +
                                           " bytes, the buffer holds " + std::to_string(capacity));
    if (!rendered.empty()) std::memcpy(require(text, "text"), rendered.data(), rendered.size());
    if (text && capacity > rendered.size()) text[rendered.size()] = '\0';
    STRATA_API_END
}

const char* strata_chat_builtin_formats(void) { return strata::chat::builtin_format_names(); }

}  // extern "C"
