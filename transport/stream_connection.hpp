// The Connection over a connected byte stream whose lowest layer is a TCP socket: one code
// path for frames in clear (TcpConnection, the stream is the socket) and frames inside TLS
// (TlsConnection, the stream is an asio::ssl::stream over the socket).
//
// Several coroutines may send at once: frames go out whole, in call order (SendLock). One
// coroutine at a time may receive. All of them must run on the socket's executor, from one
// thread or a strand; bytes_sent() and bytes_received() may be read from any thread.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/connection.hpp"
#include "transport/deadline.hpp"
#include "transport/link_connection.hpp"
#include "transport/send_lock.hpp"
#include "transport/socket_options.hpp"

namespace strata::transport {

// A Connection over a TCP socket, in clear or inside TLS. Over TLS the byte counters count the
// bytes inside TLS (records, their headers and authentication tags and the TLS handshake are
// not counted).
class SocketConnection : public LinkConnection {
public:
    // The socket's settings as the kernel reports them, and the interface it uses.
    virtual SocketObserved observed() const = 0;
    std::optional<SocketObserved> socket() const override { return observed(); }
    std::string remote() const override { return observed().remote; }
    // Protocol version and cipher when the frames travel inside TLS; nothing in clear
    // (LinkConnection::tls()).
};

// Stream is boost::asio::ip::tcp::socket or boost::asio::ssl::stream<tcp::socket> (the two
// instantiations stream_connection.cpp provides).
template <typename Stream>
class StreamConnection : public SocketConnection {
public:
    StreamConnection(Stream stream, uint64_t max_payload);
    ~StreamConnection() override;

    Task<Status> send_frame(const Frame& frame, Timeout timeout) override;
    // Gather write: the header and the parts go out as one buffer sequence, nothing copied
    // (over TLS, Asio encrypts parts of up to 8 KiB together and larger ones in place). The
    // deadline covers waiting for earlier frames too; one that passes while this frame still
    // waits gives timed_out with nothing sent and the connection left open.
    Task<Status> send_parts(MessageType type, std::span<const std::span<const uint8_t>> parts,
                            Timeout timeout) override;
    Task<Result<Frame>> receive_frame(Timeout timeout) override;
    void close() override;
    bool is_open() const override { return stream_->lowest_layer().is_open(); }
    SocketObserved observed() const override;

    Stream& stream() { return *stream_; }
    boost::asio::ip::tcp::socket& socket();

private:
    // Writes `buffers` whole before `deadline`, resuming after cancellations that were not its own.
    Task<Status> write_all(const std::vector<boost::asio::const_buffer>& buffers, Clock::time_point deadline,
                           Timeout timeout);
    // A receive deadline passed. Boost 1.74 can only cancel all of a socket's operations. A
    // plain socket's write resumes after a cancellation that was not its own; a TLS write
    // cannot (its record is half on the wire), so while one is in flight the cancellation waits
    // for it to end (its own deadline bounds the wait).
    void cancel_receive();
    void cancel_socket();

    // Shared so that a deadline handler can hold the stream it cancels.
    std::shared_ptr<Stream> stream_;
    SendLock send_lock_;
    FrameDecoder decoder_;
    std::vector<uint8_t> buffer_;
    size_t buffer_begin_ = 0, buffer_end_ = 0;  // bytes read but not yet decoded
    bool writing_ = false, receiving_ = false, receive_cancel_deferred_ = false;
};

}  // namespace strata::transport
