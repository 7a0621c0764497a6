// sse.hpp: server-sent events (text/event-stream) as the OpenAI API streams them: one
// "data: JSON\n\n" event per chunk, "data: [DONE]\n\n" at the end. The response header is
// sent with the first event, so a request that fails before any output still gets its real
// status code.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "http_server.hpp"

// Coroutine parameters are taken by value throughout: a reference to a temporary of the
// caller's co_await expression does not survive the suspension with GCC 12.

namespace server {

class SseWriter {
public:
    explicit SseWriter(Exchange& exchange) : exchange_(exchange) {}
    bool started() const { return started_; }
    // False when the client is gone.
    net::awaitable<bool> send(nlohmann::json event);
    // "data: [DONE]" and the end of the response.
    net::awaitable<void> done();

private:
    net::awaitable<bool> write(std::string data);
    Exchange& exchange_;
    bool started_ = false;
};

}  // namespace server
