#include "transport/tcp_connection.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <span>

#include "transport/crc32c.hpp"

namespace strata::transport {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr size_t kReadChunk = 64 * 1024;

Error socket_error(const error_code& ec, bool deadline_fired, Timeout timeout, const char* what) {
    if (deadline_fired && ec == asio::error::operation_aborted)
        return make_error(Errc::timed_out, std::string(what) + ": no progress within " +
                                               std::to_string(timeout.count()) + " ms");
    if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe)
        return make_error(Errc::closed, std::string(what) + ": peer closed the connection (" + ec.message() + ")");
    return make_error(Errc::io, std::string(what) + ": " + ec.message());
}

// `buffers` without their first `skip` bytes.
std::vector<asio::const_buffer> after(const std::vector<asio::const_buffer>& buffers, size_t skip) {
    std::vector<asio::const_buffer> rest;
    for (const auto& b : buffers) {
        if (skip >= b.size()) {
            skip -= b.size();
            continue;
        }
        rest.push_back(b + skip);
        skip = 0;
    }
    return rest;
}

// Cancels the socket's pending operations when a deadline passes (both directions: the other
// direction's operation sees a cancellation that is not its own and resumes).
std::function<void()> canceller(const std::shared_ptr<tcp::socket>& socket) {
    return [socket] {
        error_code ignored;
        socket->cancel(ignored);
    };
}

}  // namespace

TcpConnection::TcpConnection(tcp::socket socket, uint64_t max_payload)
    : socket_(std::make_shared<tcp::socket>(std::move(socket))),
      send_lock_(socket_->get_executor()),
      decoder_(max_payload),
      buffer_(kReadChunk) {
    error_code ignored;  // a socket that refuses NODELAY still works, only slower
    socket_->set_option(tcp::no_delay(true), ignored);
}

TcpConnection::TcpConnection(tcp::socket socket, const TcpOptions& options)
    : TcpConnection(std::move(socket), options.max_payload) {
    (void)apply(options);  // best effort: a kernel that refuses a buffer size still carries frames
}

TcpConnection::~TcpConnection() { close(); }

Status TcpConnection::apply(const TcpOptions& options) {
    if (auto st = apply_socket_options(*socket_, options); !st) return st;
    error_code ec;
    socket_->set_option(tcp::no_delay(options.no_delay), ec);
    if (ec) return make_error(Errc::io, std::string("TCP_NODELAY: ") + ec.message());
    return Ok{};
}

SocketObserved TcpConnection::observed() const { return observe_socket(*socket_); }

void TcpConnection::close() {
    error_code ignored;
    if (socket_->is_open()) {
        socket_->shutdown(tcp::socket::shutdown_both, ignored);
        socket_->close(ignored);
    }
}

Task<Status> TcpConnection::send_frame(const Frame& frame, Timeout timeout) {
    const std::span<const uint8_t> part = frame.payload;
    const std::span<const std::span<const uint8_t>> parts(&part, 1);
    Status st = co_await send_parts(frame.type, parts, timeout);
    co_return st;
}

Task<Status> TcpConnection::send_parts(MessageType type, std::span<const std::span<const uint8_t>> parts,
                                       Timeout timeout) {
    const auto deadline = deadline_after(timeout);
    if (!socket_->is_open()) co_return make_error(Errc::closed, "send: connection is closed");
    uint64_t length = 0;
    uint32_t crc = 0;
    for (auto part : parts) {
        length += part.size();
        crc = crc32c(part, crc);  // continues over the parts as over one payload
    }
    if (length > decoder_.max_payload())
        co_return make_error(Errc::oversized_length, "send: payload of " + std::to_string(length) +
                                                         " bytes exceeds the maximum of " +
                                                         std::to_string(decoder_.max_payload()));
    const bool acquired = co_await send_lock_.acquire(deadline);
    if (!acquired)
        co_return make_error(Errc::timed_out, "send: earlier frames still going out after " +
                                                  std::to_string(timeout.count()) + " ms (nothing sent)");
    SendLock::Held held(send_lock_);
    if (!socket_->is_open()) co_return make_error(Errc::closed, "send: connection is closed");

    const auto header = encode_header(type, length, crc);
    std::vector<asio::const_buffer> buffers{asio::buffer(header)};
    for (auto part : parts)
        if (!part.empty()) buffers.push_back(asio::buffer(part.data(), part.size()));
    Status st = co_await write_all(buffers, deadline, timeout);
    co_return st;
}

Task<Status> TcpConnection::write_all(const std::vector<asio::const_buffer>& buffers, Clock::time_point deadline,
                                      Timeout timeout) {
    const size_t total = asio::buffer_size(buffers);
    size_t written = 0;
    Deadline dog(socket_->get_executor(), deadline, canceller(socket_));
    while (written < total) {
        const auto rest = after(buffers, written);
        error_code ec;
        const size_t n = co_await asio::async_write(*socket_, rest, asio::redirect_error(asio::use_awaitable, ec));
        written += n;
        bytes_sent_.fetch_add(n, std::memory_order_relaxed);
        if (!ec) continue;
        // A receive's deadline cancels the whole socket: resume where the write stopped.
        if (ec == asio::error::operation_aborted && !dog.fired() && socket_->is_open()) continue;
        const bool fired = dog.fired();
        const bool was_open = socket_->is_open();
        close();  // part of a frame may be on the wire: the stream cannot be resumed
        if (!was_open && !fired) co_return make_error(Errc::closed, "send: connection was closed");
        co_return socket_error(ec, fired, timeout, "send");
    }
    co_return Ok{};
}

Task<Result<Frame>> TcpConnection::receive_frame(Timeout timeout) {
    // One deadline for the whole frame, however it arrives.
    Deadline dog(socket_->get_executor(), timeout, canceller(socket_));
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
        bytes_received_.fetch_add(n, std::memory_order_relaxed);
        if (ec) {
            if (ec == asio::error::eof && decoder_.mid_frame()) {
                close();
                co_return decoder_.finish().error();  // truncated
            }
            if (ec == asio::error::operation_aborted && !dog.fired()) {
                // A send's deadline cancelled the socket (then closed it), or close() was called.
                if (socket_->is_open()) continue;
                co_return make_error(Errc::closed, "receive: connection was closed");
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
