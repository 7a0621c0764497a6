// http_server.cpp: accept loop, per-connection sessions, the disconnect watch.
#include "http_server.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "api_error.hpp"

namespace server {
namespace {

constexpr auto kIdleTimeout = std::chrono::seconds(120);  // a keep-alive connection with no request
constexpr auto kWriteTimeout = std::chrono::seconds(60);  // a client that stops reading
constexpr uint32_t kHeaderLimit = 64 * 1024;

// After refusing a body: read and drop what the client still sends (bounded) so that closing
// does not reset the connection before the client has read the answer.
net::awaitable<void> drain_then_close(beast::tcp_stream& stream) {
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    char sink[16384];
    size_t total = 0;
    while (total < (size_t(64) << 20)) {
        stream.expires_after(std::chrono::seconds(2));
        const size_t n = co_await stream.async_read_some(net::buffer(sink), net::redirect_error(net::use_awaitable, ec));
        if (ec) break;
        total += n;
    }
    stream.socket().close(ec);
}

}  // namespace

Response error_response(int status, const std::string& message, const std::string& type, const std::string& param,
                        const std::string& code) {
    Response res{http::status(status), 11};
    res.set(http::field::content_type, "application/json");
    res.body() = json_text(error_body(ApiError(status, message, type, param, code)));
    return res;
}

// --- Exchange ---

struct Exchange::Watch {
    bool active = true;
    bool gone = false;
    std::function<void()> on_gone;
};

net::awaitable<void> Exchange::respond(Response res) {
    stop_watching();
    res.version(version_);
    res.keep_alive(keep_alive());
    res.set(http::field::server, "strata-server");
    res.prepare_payload();
    beast::error_code ec;
    stream_.expires_after(kWriteTimeout);
    co_await http::async_write(stream_, res, net::redirect_error(net::use_awaitable, ec));
    stream_.expires_never();
    if (ec) write_failed_ = true;
}

net::awaitable<bool> Exchange::begin_stream(http::status status, std::string content_type) {
    http::response<http::empty_body> res{status, version_};
    res.set(http::field::server, "strata-server");
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-cache");
    res.keep_alive(keep_alive());
    res.chunked(true);
    http::response_serializer<http::empty_body> serializer(res);
    beast::error_code ec;
    stream_.expires_after(kWriteTimeout);
    co_await http::async_write_header(stream_, serializer, net::redirect_error(net::use_awaitable, ec));
    stream_.expires_never();
    streaming_ = true;
    if (ec) write_failed_ = true;
    co_return !ec;
}

net::awaitable<bool> Exchange::write_chunk(std::string data) {
    if (write_failed_) co_return false;
    beast::error_code ec;
    stream_.expires_after(kWriteTimeout);
    co_await net::async_write(stream_, http::make_chunk(net::const_buffer(data.data(), data.size())),
                              net::redirect_error(net::use_awaitable, ec));
    stream_.expires_never();
    if (ec) write_failed_ = true;
    co_return !ec;
}

net::awaitable<void> Exchange::end_stream() {
    stop_watching();
    if (write_failed_) co_return;
    beast::error_code ec;
    stream_.expires_after(kWriteTimeout);
    co_await net::async_write(stream_, http::make_chunk_last(), net::redirect_error(net::use_awaitable, ec));
    stream_.expires_never();
    if (ec) write_failed_ = true;
}

void Exchange::watch_disconnect(std::function<void()> on_gone) {
    stop_watching();
    auto watch = std::make_shared<Watch>();
    watch->on_gone = std::move(on_gone);
    watch_ = watch;
    const int fd = stream_.socket().native_handle();
    // Readable means: bytes (a pipelined request: not gone), end of stream or an error.
    stream_.socket().async_wait(tcp::socket::wait_read, [watch, fd](const beast::error_code& ec) {
        if (!watch->active) return;
        bool gone = bool(ec);
        if (!ec) {
            char c;
            const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
            gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
        }
        watch->active = false;
        if (gone) {
            watch->gone = true;
            if (watch->on_gone) watch->on_gone();
        }
    });
}

void Exchange::stop_watching() {
    if (!watch_) return;
    if (watch_->active) {
        watch_->active = false;
        beast::error_code ec;
        stream_.socket().cancel(ec);
    }
    watch_->on_gone = nullptr;
}

bool Exchange::client_gone() const { return write_failed_ || (watch_ && watch_->gone); }

// --- HttpServer ---

uint16_t HttpServer::listen(const std::string& host, uint16_t port) {
    tcp::resolver resolver(io_);
    auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service);
    const tcp::endpoint endpoint = *results.begin();
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(net::socket_base::max_listen_connections);
    return acceptor_.local_endpoint().port();
}

void HttpServer::start() { net::co_spawn(io_, accept_loop(), net::detached); }

void HttpServer::stop_accepting() {
    net::post(io_, [this] {
        beast::error_code ec;
        acceptor_.close(ec);
    });
}

net::awaitable<void> HttpServer::accept_loop() {
    for (;;) {
        beast::error_code ec;
        tcp::socket socket = co_await acceptor_.async_accept(net::make_strand(io_), net::redirect_error(net::use_awaitable, ec));
        if (ec == net::error::operation_aborted || !acceptor_.is_open()) co_return;
        if (ec) {  // out of descriptors and the like: wait, then go on
            net::steady_timer pause(io_, std::chrono::milliseconds(100));
            co_await pause.async_wait(net::redirect_error(net::use_awaitable, ec));
            continue;
        }
        auto executor = socket.get_executor();
        net::co_spawn(executor, serve_connection(std::move(socket)), net::detached);
    }
}

net::awaitable<void> HttpServer::serve_connection(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    try {
        for (;;) {
            http::request_parser<http::string_body> parser;
            parser.body_limit(body_limit_);
            parser.header_limit(kHeaderLimit);
            beast::error_code ec;
            stream.expires_after(kIdleTimeout);
            co_await http::async_read(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
            stream.expires_never();
            if (ec == http::error::body_limit) {
                Exchange ex(stream, 11, false);
                co_await ex.respond(error_response(413,
                                                   "the request body is larger than the limit of " +
                                                       std::to_string(body_limit_) + " bytes",
                                                   "invalid_request_error", "", "request_too_large"));
                co_await drain_then_close(stream);
                co_return;
            }
            if (ec == http::error::header_limit) {
                Exchange ex(stream, 11, false);
                co_await ex.respond(error_response(431, "the request headers are too large", "invalid_request_error"));
                co_return;
            }
            if (ec) {
                // A malformed request gets a 400; a closed or silent connection just ends.
                if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
                    ec != http::error::end_of_stream && ec != http::error::partial_message) {
                    Exchange ex(stream, 11, false);
                    co_await ex.respond(error_response(400, "malformed HTTP request: " + ec.message(),
                                                       "invalid_request_error"));
                }
                break;
            }
            Request request = parser.release();
            Exchange ex(stream, request.version(), request.keep_alive());
            co_await handler_(request, ex);
            if (!ex.keep_alive()) break;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strata-server: connection ended by an error: %s\n", e.what());
    }
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

}  // namespace server
