#include "transport/stream_connection.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <span>

#include "transport/crc32c.hpp"
#include "transport/stream_error.hpp"

namespace strata::transport {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr size_t kReadChunk = 64 * 1024;

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

// A plain socket's write resumes where it stopped after a cancellation that was not its own;
// a TLS write cannot (the record it was writing is lost with the cancelled operation).
template <typename Stream>
constexpr bool kWritesResume = std::is_same_v<Stream, tcp::socket>;

template <typename Stream>
tcp::socket& tcp_socket(Stream& s) {
    if constexpr (std::is_same_v<Stream, tcp::socket>) return s;
    else return s.next_layer();
}

template <typename Stream>
const tcp::socket& tcp_socket(const Stream& s) {
    if constexpr (std::is_same_v<Stream, tcp::socket>) return s;
    else return s.next_layer();
}

}  // namespace

Error stream_error(const error_code& ec, bool deadline_fired, Timeout timeout, const char* what) {
    if (deadline_fired && ec == asio::error::operation_aborted)
        return make_error(Errc::timed_out, std::string(what) + ": no progress within " +
                                               std::to_string(timeout.count()) + " ms");
    if (peer_closed(ec))
        return make_error(Errc::closed, std::string(what) + ": peer closed the connection (" + ec.message() + ")");
    if (ec.category() == asio::error::get_ssl_category())
        return make_error(Errc::tls_failed, std::string(what) + ": TLS: " + ec.message());
    return make_error(Errc::io, std::string(what) + ": " + ec.message());
}

bool peer_closed(const error_code& ec) {
    return ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
           ec == asio::ssl::error::stream_truncated;  // TLS: the socket closed without close_notify
}

template <typename Stream>
StreamConnection<Stream>::StreamConnection(Stream stream, uint64_t max_payload)
    : stream_(std::make_shared<Stream>(std::move(stream))),
      send_lock_(stream_->get_executor()),
      decoder_(max_payload),
      buffer_(kReadChunk) {}

template <typename Stream>
StreamConnection<Stream>::~StreamConnection() {
    close();
}

template <typename Stream>
SocketObserved StreamConnection<Stream>::observed() const {
    return observe_socket(tcp_socket(*stream_));
}

template <typename Stream>
tcp::socket& StreamConnection<Stream>::socket() {
    return tcp_socket(*stream_);
}

template <typename Stream>
void StreamConnection<Stream>::close() {
    error_code ignored;
    auto& s = stream_->lowest_layer();
    if (s.is_open()) {
        s.shutdown(tcp::socket::shutdown_both, ignored);
        s.close(ignored);
    }
}

template <typename Stream>
void StreamConnection<Stream>::cancel_socket() {
    error_code ignored;
    stream_->lowest_layer().cancel(ignored);
}

template <typename Stream>
void StreamConnection<Stream>::cancel_receive() {
    if constexpr (!kWritesResume<Stream>) {
        if (writing_) {
            receive_cancel_deferred_ = true;
            return;
        }
    }
    cancel_socket();
}

template <typename Stream>
Task<Status> StreamConnection<Stream>::send_frame(const Frame& frame, Timeout timeout) {
    const std::span<const uint8_t> part = frame.payload;
    const std::span<const std::span<const uint8_t>> parts(&part, 1);
    Status st = co_await send_parts(frame.type, parts, timeout);
    co_return st;
}

template <typename Stream>
Task<Status> StreamConnection<Stream>::send_parts(MessageType type, std::span<const std::span<const uint8_t>> parts,
                                                  Timeout timeout) {
    const auto deadline = deadline_after(timeout);
    if (!is_open()) co_return make_error(Errc::closed, "send: connection is closed");
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
    if (!is_open()) co_return make_error(Errc::closed, "send: connection is closed");

    const auto header = encode_header(type, length, crc);
    std::vector<asio::const_buffer> buffers{asio::buffer(header)};
    for (auto part : parts)
        if (!part.empty()) buffers.push_back(asio::buffer(part.data(), part.size()));
    Status st = co_await write_all(buffers, deadline, timeout);
    co_return st;
}

template <typename Stream>
Task<Status> StreamConnection<Stream>::write_all(const std::vector<asio::const_buffer>& buffers,
                                                 Clock::time_point deadline, Timeout timeout) {
    const size_t total = asio::buffer_size(buffers);
    size_t written = 0;
    Deadline dog(stream_->get_executor(), deadline, [stream = stream_] {
        error_code ignored;
        stream->lowest_layer().cancel(ignored);  // both directions: the receive resumes or sees closed
    });
    writing_ = true;
    struct Finish {  // on every exit: a receive deadline that waited for this write acts now
        StreamConnection& c;
        ~Finish() {
            c.writing_ = false;
            if (c.receive_cancel_deferred_ && c.receiving_) c.cancel_socket();
            c.receive_cancel_deferred_ = false;
        }
    } finish{*this};
    while (written < total) {
        const auto rest = after(buffers, written);
        error_code ec;
        const size_t n = co_await asio::async_write(*stream_, rest, asio::redirect_error(asio::use_awaitable, ec));
        written += n;
        bytes_sent_.fetch_add(n, std::memory_order_relaxed);
        if (!ec) continue;
        // A receive's deadline cancels the whole socket: resume where the write stopped.
        if constexpr (kWritesResume<Stream>)
            if (ec == asio::error::operation_aborted && !dog.fired() && is_open()) continue;
        const bool fired = dog.fired();
        const bool was_open = is_open();
        close();  // part of a frame may be on the wire: the stream cannot be resumed
        if (!was_open && !fired) co_return make_error(Errc::closed, "send: connection was closed");
        co_return stream_error(ec, fired, timeout, "send");
    }
    co_return Ok{};
}

template <typename Stream>
Task<Result<Frame>> StreamConnection<Stream>::receive_frame(Timeout timeout) {
    // One deadline for the whole frame, however it arrives.
    Deadline dog(stream_->get_executor(), timeout, [this] { cancel_receive(); });
    receiving_ = true;
    struct Finish {
        StreamConnection& c;
        ~Finish() {
            c.receiving_ = false;
            c.receive_cancel_deferred_ = false;
        }
    } finish{*this};
    for (;;) {
        std::span<const uint8_t> pending(buffer_.data() + buffer_begin_, buffer_end_ - buffer_begin_);
        auto r = decoder_.next(pending);
        buffer_begin_ = buffer_end_ - pending.size();
        if (!r) {
            close();
            co_return r.error();
        }
        if (r.value()) co_return std::move(*r.value());

        if (!is_open()) co_return make_error(Errc::closed, "receive: connection is closed");
        error_code ec;
        const size_t n = co_await stream_->async_read_some(asio::buffer(buffer_),
                                                           asio::redirect_error(asio::use_awaitable, ec));
        bytes_received_.fetch_add(n, std::memory_order_relaxed);
        if (ec) {
            if (peer_closed(ec) && decoder_.mid_frame()) {
                close();
                co_return decoder_.finish().error();  // truncated
            }
            if (ec == asio::error::operation_aborted && !dog.fired()) {
                // A send's deadline cancelled the socket (then closed it), or close() was called.
                if (is_open()) continue;
                co_return make_error(Errc::closed, "receive: connection was closed");
            }
            auto err = stream_error(ec, dog.fired(), timeout, "receive");
            if (err.code != Errc::timed_out) close();
            co_return err;
        }
        buffer_begin_ = 0;
        buffer_end_ = n;
    }
}

template class StreamConnection<tcp::socket>;
template class StreamConnection<asio::ssl::stream<tcp::socket>>;

}  // namespace strata::transport
