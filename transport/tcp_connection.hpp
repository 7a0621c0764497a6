// Connection over a connected Boost.Asio TCP socket (TCP_NODELAY: frames are latency-bound).
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <vector>

#include "transport/connection.hpp"

namespace strata::transport {

class TcpConnection final : public Connection {
public:
    explicit TcpConnection(boost::asio::ip::tcp::socket socket, uint64_t max_payload = kDefaultMaxPayload);
    ~TcpConnection() override;

    Task<Status> send_frame(const Frame& frame, Timeout timeout) override;
    Task<Result<Frame>> receive_frame(Timeout timeout) override;
    void close() override;

private:
    // Shared so that a deadline timer whose handler outlives this object can tell.
    std::shared_ptr<boost::asio::ip::tcp::socket> socket_;
    FrameDecoder decoder_;
    std::vector<uint8_t> buffer_;
    size_t buffer_begin_ = 0, buffer_end_ = 0;  // bytes read but not yet decoded
};

}  // namespace strata::transport
