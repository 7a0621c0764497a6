// openai_response.cpp
#include "openai_response.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

namespace server {
namespace {

using nlohmann::json;

std::string random_id(const char* prefix) {
    static std::atomic<uint64_t> counter{0};
    thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%016llx%04llx", prefix, static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(counter++ & 0xffff));
    return buf;
}

json bytes_of(const std::string& s) {
    json out = json::array();
    for (unsigned char c : s) out.push_back(int(c));
    return out;
}

}  // namespace

ResponseHeader new_response_header(Endpoint endpoint, const std::string& model) {
    ResponseHeader h;
    h.endpoint = endpoint;
    h.id = random_id(endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-");
    h.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    h.model = model;
    return h;
}

const char* finish_reason_name(FinishReason reason) { return reason == FinishReason::length ? "length" : "stop"; }

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
    return {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens}};
}

json logprobs_json(Endpoint endpoint, const std::vector<TokenLogprob>& tokens, TokenText& text, size_t& offset) {
    if (endpoint == Endpoint::chat) {
        json content = json::array();
        for (const auto& t : tokens) {
            const std::string piece = text.piece(t.token);
            json top = json::array();
            for (const auto& [id, lp] : t.top) {
                const std::string p = text.piece(id);
                top.push_back({{"token", p}, {"logprob", lp}, {"bytes", bytes_of(p)}});
            }
            content.push_back({{"token", piece}, {"logprob", t.logprob}, {"bytes", bytes_of(piece)}, {"top_logprobs", top}});
        }
        return {{"content", content}};
    }
    json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    for (const auto& t : tokens) {
        const std::string piece = text.piece(t.token);
        toks.push_back(piece);
        lps.push_back(t.logprob);
        json top = json::object();
        for (const auto& [id, lp] : t.top) top[text.piece(id)] = lp;
        tops.push_back(top);
        offsets.push_back(offset);
        offset += piece.size();
    }
    return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json completion_json(const ResponseHeader& h, const std::string& text, const JobOutcome& outcome, const json& logprobs) {
    json choice;
    if (h.endpoint == Endpoint::chat)
        choice = {{"index", 0},
                  {"message", {{"role", "assistant"}, {"content", text}}},
                  {"logprobs", logprobs},
                  {"finish_reason", finish_reason_name(outcome.reason)}};
    else
        choice = {{"index", 0}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish_reason_name(outcome.reason)}};
    return {{"id", h.id},
            {"object", h.endpoint == Endpoint::chat ? "chat.completion" : "text_completion"},
            {"created", h.created},
            {"model", h.model},
            {"choices", json::array({choice})},
            {"usage", usage_json(outcome.prompt_tokens, outcome.completion_tokens)}};
}

json chunk_json(const ResponseHeader& h, const ChunkParts& parts) {
    json finish = parts.finish_reason ? json(parts.finish_reason) : json(nullptr);
    json choice;
    if (h.endpoint == Endpoint::chat) {
        json delta = json::object();
        if (parts.role) delta["role"] = "assistant";
        if (parts.role || !parts.text.empty()) delta["content"] = parts.text;
        choice = {{"index", 0}, {"delta", delta}, {"logprobs", parts.logprobs}, {"finish_reason", finish}};
    } else {
        choice = {{"index", 0}, {"text", parts.text}, {"logprobs", parts.logprobs}, {"finish_reason", finish}};
    }
    return {{"id", h.id},
            {"object", h.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
            {"created", h.created},
            {"model", h.model},
            {"choices", json::array({choice})}};
}

json usage_chunk_json(const ResponseHeader& h, int64_t prompt_tokens, int64_t completion_tokens) {
    return {{"id", h.id},
            {"object", h.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
            {"created", h.created},
            {"model", h.model},
            {"choices", json::array()},
            {"usage", usage_json(prompt_tokens, completion_tokens)}};
}

}  // namespace server
