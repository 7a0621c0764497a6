// The head's side of one worker connection, and the calls that wait on replies.
//
// Everything in Link is touched on the head's io thread only, except `stats` (under its mutex)
// and `failed_flag`. A Call is shared between the caller thread (waits) and the io thread
// (completes its parts).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/planner.hpp"
#include "transport/messages.hpp"
#include "transport/tcp.hpp"
#include "util/error.hpp"

namespace strata::pipeline::detail {

using Clock = std::chrono::steady_clock;

// One request to the pipeline, cut into parts (micro-batches); the caller waits for all.
class Call {
public:
    explicit Call(size_t parts) : replies_(parts), remaining_(parts) {}

    void complete(size_t part, transport::Message reply);
    void fail(size_t part, const Error& error);  // the first error is the one reported
    void drop(size_t part);                      // done without a reply (the call already failed)
    bool failed() const;
    // Blocks until every part is done; throws the first error.
    std::vector<transport::Message> wait();

private:
    void done_locked();
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<transport::Message> replies_;
    size_t remaining_;
    std::optional<Error> error_;
};

// What a reply on a link belongs to, and what to do with it.
struct Pending {
    std::shared_ptr<Call> call;
    size_t part = 0;
    bool relay = false;  // a hidden-state reply goes on to the next link
    uint64_t position = 0;
    std::vector<int32_t> tokens;
    transport::ForwardOutput final_output = transport::ForwardOutput::hidden;
    uint32_t n_top = 0;
    Clock::time_point sent{};
};

struct LatencyStats {
    uint64_t count = 0;
    double sum_us = 0, min_us = 0, max_us = 0;
    void add(double us);
};

struct LinkStats {
    uint64_t requests = 0, refused = 0;
    LatencyStats all;          // send to reply, any request (prefill parts queue behind each other)
    LatencyStats single_token; // forwards of one token: the per-hop decode latency
};

struct Link {
    size_t stage = 0;  // 1.. (0 is the head)
    transport::Endpoint endpoint;
    LayerRange layers{0, 0};
    std::unique_ptr<transport::LinkConnection> conn;  // a TcpConnection, TlsConnection or UcxConnection
    std::deque<Pending> pending;
    std::shared_ptr<std::atomic<bool>> heartbeat_stop = std::make_shared<std::atomic<bool>>(false);
    bool failed = false;
    std::optional<Error> failure;
    std::atomic<bool> failed_flag{false};  // readable from the caller thread

    // What the handshake and set-up learned (written before the link runs).
    transport::Hello ack{};
    transport::StageInfo info{};
    transport::StageReady ready{};
    std::optional<transport::SocketObserved> socket;  // the TCP socket's settings (tcp and tls)
    std::optional<transport::TlsObserved> tls;        // what TLS agreed; nothing in clear
    std::optional<transport::UcxObserved> ucx;        // what UCX chose (rdma)

    mutable std::mutex stats_mutex;
    LinkStats stats;

    std::string name() const;  // "stage 2 (worker 127.0.0.1:7002, layers 8:16)"
};

// The library error a worker's error frame stands for, prefixed with the stage's name.
Error remote_error(const Link& link, const transport::ErrorMessage& m);
// A transport failure on the link, as the library error the caller sees.
Error link_error(const Link& link, const transport::Error& e, const char* doing);

}  // namespace strata::pipeline::detail
