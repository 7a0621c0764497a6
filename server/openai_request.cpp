// openai_request.cpp: request bodies to structs, every known field type- and range-checked.
#include "openai_request.hpp"

#include <cmath>
#include <limits>

#include "api_error.hpp"

namespace server {
namespace {

using nlohmann::json;

const json* field(const json& body, const char* name) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return nullptr;  // null: as if absent, as OpenAI takes it
    return &*it;
}

bool boolean(const json& body, const char* name, bool fallback) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_boolean()) throw invalid_field(name, "must be a boolean");
    return v->get<bool>();
}

double number(const json& body, const char* name, double fallback, double lo, double hi) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number()) throw invalid_field(name, "must be a number");
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        throw invalid_field(name, "must be from " + std::to_string(lo) + " to " + std::to_string(hi));
    return x;
}

// An integer, also written as a float with no fraction (1.0).
std::optional<int64_t> integer(const json& body, const char* name, int64_t lo, int64_t hi) {
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    int64_t x = 0;
    if (v->is_number_unsigned()) {
        const uint64_t u = v->get<uint64_t>();
        if (u > uint64_t(std::numeric_limits<int64_t>::max())) throw invalid_field(name, "is out of range");
        x = int64_t(u);
    } else if (v->is_number_integer()) {
        x = v->get<int64_t>();
    } else if (v->is_number_float()) {
        const double d = v->get<double>();
        if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9e15) throw invalid_field(name, "must be an integer");
        x = int64_t(d);
    } else {
        throw invalid_field(name, "must be an integer");
    }
    if (x < lo || x > hi)
        throw invalid_field(name, "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
                                      std::to_string(x));
    return x;
}

std::string string(const json& body, const char* name) {
    const json* v = field(body, name);
    if (!v) return {};
    if (!v->is_string()) throw invalid_field(name, "must be a string");
    return v->get<std::string>();
}

std::vector<std::string> stop_strings(const json& body) {
    const json* v = field(body, "stop");
    if (!v) return {};
    std::vector<std::string> out;
    if (v->is_string()) out.push_back(v->get<std::string>());
    else if (v->is_array()) {
        if (v->size() > 16) throw invalid_field("stop", "holds at most 16 strings");
        for (const auto& s : *v) {
            if (!s.is_string()) throw invalid_field("stop", "must be a string or an array of strings");
            out.push_back(s.get<std::string>());
        }
    } else {
        throw invalid_field("stop", "must be a string or an array of strings");
    }
    for (const auto& s : out)
        if (s.empty()) throw invalid_field("stop", "holds an empty string");
    return out;
}

// The fields chat and completions share.
void common_fields(const json& body, CompletionRequest& r) {
    r.model = string(body, "model");
    r.stream = boolean(body, "stream", false);
    if (const json* so = field(body, "stream_options")) {
        if (!so->is_object()) throw invalid_field("stream_options", "must be an object");
        r.include_usage = boolean(*so, "include_usage", false);
    }
    if (auto n = integer(body, "n", 1, 128); n && *n != 1)
        throw invalid_field("n", "must be 1: one choice per request is served");
    r.stop = stop_strings(body);
    auto& s = r.sampling;
    s.temperature = float(number(body, "temperature", 1.0, 0.0, 100.0));
    s.top_p = float(number(body, "top_p", 1.0, 0.0, 1.0));
    if (s.top_p <= 0.0f) throw invalid_field("top_p", "must be above 0");
    s.top_k = int32_t(integer(body, "top_k", 0, 1 << 20).value_or(0));
    s.min_p = float(number(body, "min_p", 0.0, 0.0, 1.0));
    s.repeat_penalty = float(number(body, "repeat_penalty", 1.0, 0.0, 100.0));
    if (s.repeat_penalty <= 0.0f) throw invalid_field("repeat_penalty", "must be above 0");
    s.repeat_last_n = int32_t(integer(body, "repeat_last_n", 0, 1 << 20).value_or(64));
    if (auto seed = integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))
        s.seed = uint64_t(*seed);
    // Accepted for compatibility; they must still be numbers.
    number(body, "presence_penalty", 0.0, -2.0, 2.0);
    number(body, "frequency_penalty", 0.0, -2.0, 2.0);
    string(body, "user");
}

void check_messages(const json& messages) {
    if (!messages.is_array()) throw invalid_field("messages", "must be an array of messages");
    if (messages.empty()) throw invalid_field("messages", "must hold at least one message");
    for (size_t i = 0; i < messages.size(); ++i) {
        const json& m = messages[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw invalid_field(where, "must be an object");
        auto role = m.find("role");
        if (role == m.end() || !role->is_string()) throw invalid_field(where + ".role", "must be a string");
        auto content = m.find("content");
        if (content != m.end() && !content->is_string() && !content->is_null() && !content->is_array())
            throw invalid_field(where + ".content", "must be a string, null or an array of parts");
        if (content != m.end() && content->is_array())
            for (const auto& part : *content)
                if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
                    throw invalid_field(where + ".content", "parts must be objects with a string 'type'");
    }
}

}  // namespace

json parse_json_object(std::string_view body) {
    json value;
    try {
        value = json::parse(body.begin(), body.end());
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number past a double
        throw ApiError(400, std::string("malformed JSON in the request body: ") + e.what(), "invalid_request_error", "",
                       "invalid_json");
    }
    if (!value.is_object()) throw ApiError(400, "the request body must be a JSON object", "invalid_request_error");
    return value;
}

CompletionRequest parse_chat_request(const json& body) {
    CompletionRequest r;
    r.endpoint = Endpoint::chat;
    const json* messages = field(body, "messages");
    if (!messages) throw invalid_field("messages", "is required");
    check_messages(*messages);
    r.messages = *messages;
    common_fields(body, r);
    auto max_completion = integer(body, "max_completion_tokens", 1, std::numeric_limits<int32_t>::max());
    auto max_tokens = integer(body, "max_tokens", 1, std::numeric_limits<int32_t>::max());
    r.max_tokens = max_completion ? max_completion : max_tokens;
    r.logprobs = boolean(body, "logprobs", false);
    r.top_logprobs = int32_t(integer(body, "top_logprobs", 0, 20).value_or(0));
    if (r.top_logprobs > 0 && !r.logprobs) throw invalid_field("top_logprobs", "needs 'logprobs': true");
    return r;
}

CompletionRequest parse_completion_request(const json& body) {
    CompletionRequest r;
    r.endpoint = Endpoint::completion;
    const json* prompt = field(body, "prompt");
    if (!prompt) throw invalid_field("prompt", "is required");
    if (prompt->is_string()) r.prompt = prompt->get<std::string>();
    else if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) r.prompt = (*prompt)[0].get<std::string>();
    else if (prompt->is_array() && prompt->size() > 1)
        throw invalid_field("prompt", "must be one prompt: a string or an array of one string");
    else throw invalid_field("prompt", "must be a string or an array of one string");
    common_fields(body, r);
    r.max_tokens = integer(body, "max_tokens", 1, std::numeric_limits<int32_t>::max());
    if (auto n = integer(body, "logprobs", 0, 20)) {
        r.logprobs = true;
        r.top_logprobs = int32_t(*n);
    }
    if (boolean(body, "echo", false)) throw invalid_field("echo", "is not supported");
    if (!string(body, "suffix").empty()) throw invalid_field("suffix", "is not supported");
    return r;
}

TokenizeRequest parse_tokenize_request(const json& body) {
    TokenizeRequest r;
    const json* content = field(body, "content");
    if (!content || !content->is_string()) throw invalid_field("content", "must be a string");
    r.content = content->get<std::string>();
    r.add_special = boolean(body, "add_special", false);
    r.parse_special = boolean(body, "parse_special", true);
    return r;
}

std::vector<int32_t> parse_detokenize_request(const json& body) {
    const json* tokens = field(body, "tokens");
    if (!tokens || !tokens->is_array()) throw invalid_field("tokens", "must be an array of token ids");
    std::vector<int32_t> out;
    out.reserve(tokens->size());
    for (const auto& t : *tokens) {
        if (!t.is_number_integer()) throw invalid_field("tokens", "must hold integers");
        const int64_t v = t.get<int64_t>();
        if (v < 0 || v > std::numeric_limits<int32_t>::max()) throw invalid_field("tokens", "holds an id out of range");
        out.push_back(int32_t(v));
    }
    return out;
}

}  // namespace server
