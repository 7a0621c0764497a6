#include "transport/tcp_connection.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <span>

namespace strata::transport {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr size_t kReadChunk = 64 * 1024;

// Races a deadline against a socket operation (Boost 1.74 has no awaitable operators or
// cancellation slots): when the timer fires first it cancels the socket's pending work.
class Watchdog {
public:
    Watchdog(const std::shared_ptr<tcp::socket>& socket, Timeout timeout)
        : timer_(socket->get_executor()), fired_(std::make_shared<bool>(false)) {
        timer_.expires_after(timeout);
        timer_.async_wait([weak = std::weak_ptr<tcp::socket>(socket), fired = fired_](error_code ec) {
            if (ec) return;  // cancelled: the operation finished in time
            *fired = true;
            if (auto s = weak.lock()) {
                error_code ignored;
                s->cancel(ignored);
            }
        });
    }
    ~Watchdog() { timer_.cancel(); }
    bool fired() const { return *fired_; }

private:
    asio::steady_timer timer_;
    std::shared_ptr<bool> fired_;
};

Error socket_error(const error_code& ec, bool deadline_fired, Timeout timeout, const char* what) {
    if (deadline_fired && ec == asio::error::operation_aborted)
        return make_error(Errc::timed_out, std::string(what) + ": no progress within " +
                                               std::to_string(timeout.count()) + " ms");
    if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe)
        return make_error(Errc::closed, std::string(what) + ": peer closed the connection (" + ec.message() + ")");
    return make_error(Errc::io, std::string(what) + ": " + ec.message());
}

}  // namespace

TcpConnection::TcpConnection(tcp::socket socket, uint64_t max_payload)
    : socket_(std::make_shared<tcp::socket>(std::move(socket))), decoder_(max_payload), buffer_(kReadChunk) {
    error_code ignored;  // a socket that refuses NODELAY still works, only slower
    socket_->set_option(tcp::no_delay(true), ignored);
}

TcpConnection::~TcpConnection() { close(); }

void TcpConnection::close() {
    error_code ignored;
    if (socket_->is_open()) {
        socket_->shutdown(tcp::socket::shutdown_both, ignored);
        socket_->close(ignored);
    }
}

Task<Status> TcpConnection::send_frame(const Frame& frame, Timeout timeout) {
    if (!socket_->is_open()) co_return make_error(Errc::closed, "send: connection is closed");
    if (frame.payload.size() > decoder_.max_payload())
        co_return make_error(Errc::oversized_length, "send: payload exceeds the maximum");
    const auto wire = encode_frame(frame);
    error_code ec;
    bool fired = false;
    {
        Watchdog dog(socket_, timeout);
        co_await asio::async_write(*socket_, asio::buffer(wire), asio::redirect_error(asio::use_awaitable, ec));
        fired = dog.fired();
    }
    if (ec) {
        close();  // part of a frame may be on the wire: the stream cannot be resumed
        co_return socket_error(ec, fired, timeout, "send");
    }
    co_return Ok{};
}

Task<Result<Frame>> TcpConnection::receive_frame(Timeout timeout) {
    Watchdog dog(socket_, timeout);  // one deadline for the whole frame, however it arrives
    for (;;) {
        std::span<const uint8_t> pending(buffer_.data() + buffer_begin_, buffer_end_ - buffer_begin_);
        auto r = decoder_.next(pending);
        buffer_begin_ = buffer_end_ - pending.size();
        if (!r) {
            close();
            co_return r.error();
        }
        if (r.value()) co_return std::move(*r.value());

        if (!socket_->is_open()) co_return make_error(Errc::closed, "receive: connection is closed");
        error_code ec;
        const size_t n = co_await socket_->async_read_some(asio::buffer(buffer_),
                                                           asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (ec == asio::error::eof && decoder_.mid_frame()) {
                close();
                co_return decoder_.finish().error();  // truncated
            }
            auto err = socket_error(ec, dog.fired(), timeout, "receive");
            if (err.code != Errc::timed_out) close();
            co_return err;
        }
        buffer_begin_ = 0;
        buffer_end_ = n;
    }
}

}  // namespace strata::transport
