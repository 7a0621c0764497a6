// sse.cpp
#include "sse.hpp"

#include "api_error.hpp"

namespace server {

net::awaitable<bool> SseWriter::write(std::string data) {
    if (!started_) {
        started_ = true;
        const bool began = co_await exchange_.begin_stream(http::status::ok, std::string("text/event-stream"));
        if (!began) co_return false;
    }
    const bool written = co_await exchange_.write_chunk(std::move(data));
    co_return written;
}

net::awaitable<bool> SseWriter::send(nlohmann::json event) {
    std::string data = "data: " + json_text(event) + "\n\n";
    const bool written = co_await write(std::move(data));
    co_return written;
}

net::awaitable<void> SseWriter::done() {
    std::string data = "data: [DONE]\n\n";
    const bool written = co_await write(std::move(data));
    if (written) co_await exchange_.end_stream();
}

}  // namespace server
