// openai_response.hpp: the JSON the OpenAI API answers with: chat.completion and
// text_completion objects, their stream chunks (chat.completion.chunk, text_completion), usage
// and log-probabilities.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "job.hpp"
#include "openai_request.hpp"
#include "token_text.hpp"

namespace server {

struct ResponseHeader {
    Endpoint endpoint = Endpoint::completion;
    std::string id;     // chatcmpl-... or cmpl-...
    int64_t created = 0;
    std::string model;
};

ResponseHeader new_response_header(Endpoint endpoint, const std::string& model);

const char* finish_reason_name(FinishReason reason);
nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

// Log-probabilities of these tokens as the endpoint writes them; text_offset (completions)
// counts the tokens' bytes from `offset`, which is moved past them.
nlohmann::json logprobs_json(Endpoint endpoint, const std::vector<TokenLogprob>& tokens, TokenText& text,
                             size_t& offset);

// The whole answer of a request that was not streamed.
nlohmann::json completion_json(const ResponseHeader& h, const std::string& text, const JobOutcome& outcome,
                               const nlohmann::json& logprobs);

// A stream chunk: role (chat's first chunk), text, finish reason (the last), log-probabilities.
struct ChunkParts {
    bool role = false;
    std::string text;
    const char* finish_reason = nullptr;
    nlohmann::json logprobs;  // null when none
};
nlohmann::json chunk_json(const ResponseHeader& h, const ChunkParts& parts);
// The extra last chunk of stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk_json(const ResponseHeader& h, int64_t prompt_tokens, int64_t completion_tokens);

}  // namespace server
