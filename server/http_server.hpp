// http_server.hpp: the HTTP/1.1 listener on Boost.Beast. Each connection is a coroutine on its
// own strand (several threads run the io_context); requests are read with a body size limit
// (413 past it), answered by the handler, and the connection is kept alive when the client asks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// Coroutine parameters are taken by value: a reference to a temporary of the caller's
// co_await expression does not survive the suspension with GCC 12.

// One request's way back to its client: a whole response, or a chunked stream of events.
class Exchange {
public:
    Exchange(beast::tcp_stream& stream, unsigned version, bool keep_alive)
        : stream_(stream), version_(version), keep_alive_(keep_alive) {}
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;
    ~Exchange() { stop_watching(); }

    net::any_io_executor executor() { return stream_.get_executor(); }
    unsigned version() const { return version_; }

    // Sends RES (version, keep-alive and length set here).
    net::awaitable<void> respond(Response res);
    // The header of a chunked response; false when the client is gone.
    net::awaitable<bool> begin_stream(http::status status, std::string content_type);
    net::awaitable<bool> write_chunk(std::string data);
    net::awaitable<void> end_stream();
    bool streaming() const { return streaming_; }

    // Calls ON_GONE once if the client closes its side while the request is served (a peer
    // that sends more bytes, a pipelined request, is not gone). The watch ends with
    // stop_watching or with the exchange.
    void watch_disconnect(std::function<void()> on_gone);
    void stop_watching();

    bool client_gone() const;  // the watch saw the peer close, or a write failed
    bool keep_alive() const { return keep_alive_ && !client_gone(); }
    void close_after() { keep_alive_ = false; }

private:
    struct Watch;
    beast::tcp_stream& stream_;
    unsigned version_;
    bool keep_alive_;
    bool write_failed_ = false;
    bool streaming_ = false;
    std::shared_ptr<Watch> watch_;
};

using Handler = std::function<net::awaitable<void>(Request&, Exchange&)>;

class HttpServer {
public:
    HttpServer(net::io_context& io, Handler handler, uint64_t body_limit)
        : io_(io), acceptor_(io), handler_(std::move(handler)), body_limit_(body_limit) {}

    // Binds HOST:PORT (0: any free port) and returns the port bound. Throws on failure.
    uint16_t listen(const std::string& host, uint16_t port);
    void start();
    // Closes the listening socket (thread-safe); connections already open go on.
    void stop_accepting();

private:
    net::awaitable<void> accept_loop();
    net::awaitable<void> serve_connection(tcp::socket socket);

    net::io_context& io_;
    tcp::acceptor acceptor_;
    Handler handler_;
    uint64_t body_limit_;
};

// An OpenAI-style JSON error response.
Response error_response(int status, const std::string& message, const std::string& type,
                        const std::string& param = "", const std::string& code = "");

}  // namespace server
