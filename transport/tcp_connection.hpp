// Connection over a connected Boost.Asio TCP socket, frames in clear (TCP_NODELAY: frames are
// latency-bound). The framing, deadlines, FIFO sends and counters are StreamConnection's, the
// same code as TlsConnection's (stream_connection.hpp).
#pragma once

#include "transport/stream_connection.hpp"

namespace strata::transport {

class TcpConnection final : public StreamConnection<boost::asio::ip::tcp::socket> {
public:
    explicit TcpConnection(boost::asio::ip::tcp::socket socket, uint64_t max_payload = kDefaultMaxPayload);
    // Applies `options` (buffers, TCP_NODELAY; best effort, see apply) and its max_payload.
    TcpConnection(boost::asio::ip::tcp::socket socket, const TcpOptions& options);

    // Sets the socket buffers (when non-zero) and TCP_NODELAY as `options` say; io naming the
    // option the kernel refused. max_payload is fixed at construction.
    Status apply(const TcpOptions& options);
    const char* kind() const override { return "tcp"; }
};

}  // namespace strata::transport
