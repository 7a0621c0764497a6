// One UCP worker (a progress engine with its own wake-up file descriptor) on an Asio executor.
//
// A pump coroutine drives UCX's progress whenever the wake-up fd says UCX has events, whether
// or not anyone waits: connection set-up, flushes and closes need both ends to progress, and a
// connection that nobody reads from must still answer them. Coroutines wait on the worker for
// a condition (a send done, bytes received); progress that did anything wakes them to check.
//
// UCX's TCP transport does not signal the wake-up fd when a full socket can take more, so
// while a waiter says it has a send in flight the pump also polls every millisecond.
//
// Single-threaded: every user runs on the executor given at creation (one thread or a strand).
// Owners call stop() when done; the worker is destroyed when the pump has seen it.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <ucp/api/ucp_def.h>

#include <functional>
#include <memory>
#include <optional>
#include <set>

#include "transport/deadline.hpp"
#include "transport/ucx/ucx_context.hpp"

namespace strata::transport {

class UcxWorker;

// What UCX's error handler writes to for one endpoint. Shared by the connection and, while it
// closes, the worker's pump: UCX may report a failure until the close has been posted.
struct UcxEndpointState {
    int failure = 0;             // ucs_status_t of the first error the endpoint reported; 0: none
    UcxWorker* worker = nullptr; // the endpoint's worker (outlives the endpoint)
};

class UcxWorker {
public:
    // The worker with its pump running on `ex`.
    static Result<std::shared_ptr<UcxWorker>> make(std::shared_ptr<UcxContext> context,
                                                   boost::asio::any_io_executor ex);
    ~UcxWorker();
    UcxWorker(const UcxWorker&) = delete;
    UcxWorker& operator=(const UcxWorker&) = delete;

    ucp_worker_h handle() const { return worker_; }
    const std::shared_ptr<UcxContext>& context() const { return context_; }
    const boost::asio::any_io_executor& executor() const { return ex_; }

    // ucp_worker_progress until it has nothing more to do; wakes the waiters when it did anything.
    void progress();
    // True once ready() holds (checked after progress), false when `deadline` passed first.
    // `poll`: a send is in flight, so the pump polls meanwhile.
    Task<bool> wait_until(std::function<bool()> ready, Clock::time_point deadline, bool poll = false);
    // Wakes every waiter to check its condition again (an endpoint failed or was closed).
    void wake();
    // ucp_worker_progress until `request` is no longer in progress or `limit` has passed
    // (blocking: for requests that complete locally, such as those of a forced close).
    void progress_until_done(void* request, Clock::duration limit);
    // The pump ends; waiters wake. The last owner's reference then goes with the pump's.
    void stop();
    // Closes `ep` and then stops. `force`: at once, nothing flushed (the endpoint failed).
    // Otherwise the close flushes, and the pump lingers until it is done (the peer takes part)
    // or kLinger has passed. `wait_for_peer`: first wait, up to kPeerGrace, for the peer to
    // close its end: UCX's connection manager may tell the peer of a close before the peer has
    // read the last bytes sent (over TCP they travel on another socket), and the peer's UCX then
    // drops them, so the side that spoke last lets the other hang up first.
    void close_endpoint(ucp_ep_h ep, std::shared_ptr<UcxEndpointState> state, bool force, bool wait_for_peer);

private:
    UcxWorker(std::shared_ptr<UcxContext> context, ucp_worker_h worker, int fd, boost::asio::any_io_executor ex);
    static Task<void> pump(std::shared_ptr<UcxWorker> self);

    std::shared_ptr<UcxContext> context_;  // outlives the worker
    ucp_worker_h worker_;
    boost::asio::any_io_executor ex_;
    boost::asio::posix::stream_descriptor wakeup_;  // UCX owns the fd: released, not closed
    std::set<boost::asio::steady_timer*> waiters_;
    int polling_ = 0;  // waiters with a send in flight
    bool stopped_ = false;
    struct Closing {
        ucp_ep_h ep = nullptr;
        std::shared_ptr<UcxEndpointState> state;
        bool wait_for_peer = false;
        Clock::time_point peer_grace_until{};
        bool posted = false;
        void* request = nullptr;  // the close request, while the pump lingers on it
        Clock::time_point linger_until{};
    };
    std::optional<Closing> closing_;
    void post_close(Closing& c, bool force);
    bool closing_done();
    // Closes the closing endpoint by force now, waits briefly for that, and forgets it.
    void abandon_close();
};

}  // namespace strata::transport
