// openai_request.hpp: the bodies of POST /v1/chat/completions and POST /v1/completions parsed
// and type-checked into a CompletionRequest (an ApiError naming the field otherwise). Fields the
// server does not know are ignored; known ones of the wrong type or out of range are 400.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace server {

enum class Endpoint { chat, completion };

struct SamplingSettings {
    float temperature = 1.0f;  // OpenAI's default; 0: greedy
    float top_p = 1.0f;
    int32_t top_k = 0;         // 0: off
    float min_p = 0.0f;        // 0: off
    float repeat_penalty = 1.0f;
    int32_t repeat_last_n = 64;
    std::optional<uint64_t> seed;  // absent: a fresh random seed per request
};

struct CompletionRequest {
    Endpoint endpoint = Endpoint::completion;
    std::string model;              // echoed back; any id is accepted
    std::string prompt;             // completions
    nlohmann::json messages;        // chat: the array as sent
    bool stream = false;
    bool include_usage = false;     // stream_options.include_usage
    std::optional<int64_t> max_tokens;
    std::vector<std::string> stop;
    SamplingSettings sampling;
    bool logprobs = false;          // per-token log-probabilities asked for
    int32_t top_logprobs = 0;       // alternatives per token
};

// Parses JSON text that must be an object (400 "malformed JSON" / "must be a JSON object").
nlohmann::json parse_json_object(std::string_view body);

CompletionRequest parse_chat_request(const nlohmann::json& body);
CompletionRequest parse_completion_request(const nlohmann::json& body);

// POST /tokenize {"content": string, "add_special": bool (default false), "parse_special": bool
// (default true)} and POST /detokenize {"tokens": [int, ...]}.
struct TokenizeRequest {
    std::string content;
    bool add_special = false;
    bool parse_special = true;
};
TokenizeRequest parse_tokenize_request(const nlohmann::json& body);
std::vector<int32_t> parse_detokenize_request(const nlohmann::json& body);

}  // namespace server
