// A Connection over a UCX endpoint (the "rdma" transport): the same frames as TCP, carried by
// UCP's stream API, which keeps bytes in order per endpoint on whatever transport UCX chose
// (RC verbs on RoCE or InfiniBand, shared memory on one host, TCP otherwise).
//
// - send_parts posts the header and the parts as one IOV send, nothing copied: UCX sends from
//   where the bytes lie (zero-copy from registered memory where the transport can). Sends post
//   in call order and UCX keeps that order, so frames from several coroutines go out whole. A
//   send that misses its deadline closes the connection (a posted UCX send cannot be taken
//   back) and returns only once UCX has let go of the caller's buffers.
// - receive_frame takes what UCX has received (ucp_stream_recv_data_nb) and decodes frames as
//   the TCP connection does; a receive that misses its deadline loses no bytes.
// - A peer that dies or closes is seen through UCX's error handler (peer failure mode): the
//   connection reads as closed.
//
// close() ends the worker's pump: io_context::run returns once every connection and listener
// is closed. Every coroutine runs on the worker's executor; one receiver at a time.
#pragma once

#include <sys/socket.h>

#include <ucp/api/ucp_def.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transport/frame.hpp"
#include "transport/link_connection.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace strata::transport {

class UcxConnection final : public LinkConnection {
public:
    // Takes an endpoint made on `worker` by ucx_dial or UcxListener::accept, with its state.
    UcxConnection(std::shared_ptr<UcxWorker> worker, ucp_ep_h ep, std::shared_ptr<UcxEndpointState> shared,
                  uint64_t max_payload, std::string local, std::string remote);
    ~UcxConnection() override;

    Task<Status> send_frame(const Frame& frame, Timeout timeout) override;
    Task<Status> send_parts(MessageType type, std::span<const std::span<const uint8_t>> parts,
                            Timeout timeout) override;
    Task<Result<Frame>> receive_frame(Timeout timeout) override;
    void close() override;
    bool is_open() const override;
    const char* kind() const override { return "rdma"; }
    std::string remote() const override { return remote_; }
    std::optional<UcxObserved> ucx() const override;

    // One UCX send of `pieces` as they are, under the deadline (send_parts puts a frame header
    // before the parts). Public for tests that write bytes the codec would never produce.
    Task<Status> send_raw(std::span<const std::span<const uint8_t>> pieces, Timeout timeout);

    // Waits until UCX has finished setting the endpoint up (every earlier operation flushed), or
    // the peer refused or failed: io "connection refused" etc., timed_out.
    Task<Status> flush(Clock::time_point deadline, Timeout timeout);

private:
    Error failure_error(const char* what) const;
    std::shared_ptr<UcxWorker> worker_;
    ucp_ep_h ep_;
    std::shared_ptr<UcxEndpointState> shared_;
    FrameDecoder decoder_;
    std::vector<uint8_t> buffer_;  // bytes received but not yet decoded
    size_t buffer_begin_ = 0;
    std::string local_, remote_;
    bool closed_ = false;
    bool spoke_last_ = false;  // the last thing done was a send: on close, let the peer hang up first
    int sends_in_flight_ = 0;
};

// "1.2.3.4:80", "[::1]:80" ("" for another family).
std::string sockaddr_text(const sockaddr_storage& sa);
// The endpoint's local and remote socket addresses as sockaddr_text gives them ("" unknown).
std::pair<std::string, std::string> endpoint_addresses(ucp_ep_h ep);


}  // namespace strata::transport
