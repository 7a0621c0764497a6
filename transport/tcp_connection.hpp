// Connection over a connected Boost.Asio TCP socket (TCP_NODELAY: frames are latency-bound).
//
// Several coroutines may send at once: frames go out whole, in call order (SendLock). One
// coroutine at a time may receive. All of them must run on the socket's executor, from one
// thread or a strand; bytes_sent() and bytes_received() may be read from any thread.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <memory>
#include <vector>

#include "transport/connection.hpp"
#include "transport/deadline.hpp"
#include "transport/send_lock.hpp"
#include "transport/socket_options.hpp"

namespace strata::transport {

class TcpConnection final : public Connection {
public:
    explicit TcpConnection(boost::asio::ip::tcp::socket socket, uint64_t max_payload = kDefaultMaxPayload);
    // Applies `options` (buffers, TCP_NODELAY; best effort, see apply) and its max_payload.
    TcpConnection(boost::asio::ip::tcp::socket socket, const TcpOptions& options);
    ~TcpConnection() override;

    // Sets the socket buffers (when non-zero) and TCP_NODELAY as `options` say; io naming the
    // option the kernel refused. max_payload is fixed at construction.
    Status apply(const TcpOptions& options);

    Task<Status> send_frame(const Frame& frame, Timeout timeout) override;
    // Gather write: the header and the parts go out as one buffer sequence, nothing copied.
    // The deadline covers waiting for earlier frames too; one that passes while this frame
    // still waits gives timed_out with nothing sent and the connection left open.
    Task<Status> send_parts(MessageType type, std::span<const std::span<const uint8_t>> parts,
                            Timeout timeout) override;
    Task<Result<Frame>> receive_frame(Timeout timeout) override;
    void close() override;
    bool is_open() const { return socket_->is_open(); }

    // Wire bytes, headers included, since the connection was made.
    uint64_t bytes_sent() const { return bytes_sent_.load(std::memory_order_relaxed); }
    uint64_t bytes_received() const { return bytes_received_.load(std::memory_order_relaxed); }
    // The socket's settings as the kernel reports them, and the interface it uses.
    SocketObserved observed() const;

private:
    // Writes `buffers` whole before `deadline`, resuming after cancellations that were not its own.
    Task<Status> write_all(const std::vector<boost::asio::const_buffer>& buffers, Clock::time_point deadline,
                           Timeout timeout);

    // Shared so that a deadline handler can hold the socket it cancels.
    std::shared_ptr<boost::asio::ip::tcp::socket> socket_;
    SendLock send_lock_;
    FrameDecoder decoder_;
    std::vector<uint8_t> buffer_;
    size_t buffer_begin_ = 0, buffer_end_ = 0;  // bytes read but not yet decoded
    std::atomic<uint64_t> bytes_sent_{0}, bytes_received_{0};
};

}  // namespace strata::transport
