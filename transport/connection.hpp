// The interface pipeline stages talk through: frames in, frames out, each under a deadline.
// TCP implements it today; RDMA and NCCL will sit behind the same interface.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <span>

#include "transport/error.hpp"
#include "transport/frame.hpp"

namespace strata::transport {

template <typename T>
using Task = boost::asio::awaitable<T>;
using Timeout = std::chrono::milliseconds;

class Connection {
public:
    virtual ~Connection() = default;
    // Errors come back as values (timed_out, closed, io, any decode error); nothing throws.
    // A send that misses its deadline or fails leaves the stream unusable and closes it.
    virtual Task<Status> send_frame(const Frame& frame, Timeout timeout) = 0;
    // One frame whose payload is the concatenation of `parts`, so that large elements can go
    // out from where they lie. The default joins the parts and calls send_frame; TcpConnection
    // writes them as they are (gather write, CRC32C over the parts in turn).
    virtual Task<Status> send_parts(MessageType type, std::span<const std::span<const uint8_t>> parts,
                                    Timeout timeout);
    // A receive that misses its deadline loses no bytes: the connection stays usable.
    // A decode error closes it (the stream has lost its framing).
    virtual Task<Result<Frame>> receive_frame(Timeout timeout) = 0;
    virtual void close() = 0;
};

inline Task<Status> Connection::send_parts(MessageType type, std::span<const std::span<const uint8_t>> parts,
                                           Timeout timeout) {
    Frame frame{type, {}};
    for (auto part : parts) frame.payload.insert(frame.payload.end(), part.begin(), part.end());
    Status st = co_await send_frame(frame, timeout);
    co_return st;
}

}  // namespace strata::transport
