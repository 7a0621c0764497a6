#include "chat/chat_template.hpp"

#include "chat/jinja_json.hpp"
#include "chat/jinja_parser.hpp"
#include "util/error.hpp"

namespace strata::chat {

std::string apply_chat_template(const ChatRequest& request) {
    RenderArena arena;  // everything made below is emptied on the way out (cycles)
    Value messages = parse_json(request.messages_json, "messages_json");
    if (!messages.is_list())
        fail(Status::invalid_argument, std::string("messages_json must be a JSON array of messages, not a JSON ") +
                                           (messages.is_dict() ? "object" : messages.type_name()));
    Value variables = Value::new_dict();
    if (!request.extra_json.empty()) {
        Value extra = parse_json(request.extra_json, "extra_json");
        if (!extra.is_dict()) fail(Status::invalid_argument, "extra_json must be a JSON object of template variables");
        variables = extra;
    }
    // These come from the arguments and the model; extra_json cannot override them.
    variables.dict->set(Value::from_string("messages"), messages);
    variables.dict->set(Value::from_string("add_generation_prompt"), Value::from_bool(request.add_generation_prompt));
    variables.dict->set(Value::from_string("bos_token"), Value::from_string(request.bos_token));
    variables.dict->set(Value::from_string("eos_token"), Value::from_string(request.eos_token));
    Template tpl = parse_template(request.template_source);
    Interpreter interp(request.limits);
    return interp.render(tpl, variables);
}

}  // namespace strata::chat
