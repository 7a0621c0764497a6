// Dialing and listening for the "rdma" transport: UCX's client-server connection set-up on an
// IP address and port (RDMA CM on RoCE and InfiniBand, TCP where there is no RDMA device),
// then UcxConnection on the endpoint.
//
//   auto context = UcxContext::make(options);                       // once per head or worker
//   auto listener = UcxListener::bind(ex, {"10.0.0.2", 7001}, context.value());
//   ... co_await listener.value()->accept();                       // Result<unique_ptr<UcxConnection>>
//   ... co_await ucx_dial(ex, to, context, timeout);               // named arguments only (GCC 12)
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <deque>
#include <memory>

#include "transport/tcp.hpp"
#include "transport/ucx/ucx_connection.hpp"

namespace strata::transport {

// Resolves `to`, asks UCX to connect to its first address and waits until the endpoint is set
// up (or refused: io "connection refused (UCX: ...)", or timed_out). Each connection has its
// own UCX worker on `ex`.
Task<Result<std::unique_ptr<UcxConnection>>> ucx_dial(boost::asio::any_io_executor ex, Endpoint to,
                                                      std::shared_ptr<UcxContext> context, Timeout timeout);

class UcxListener {
public:
    // io naming the endpoint when UCX cannot listen there (address in use, not a local address).
    static Result<std::unique_ptr<UcxListener>> bind(boost::asio::any_io_executor ex, const Endpoint& at,
                                                     std::shared_ptr<UcxContext> context);
    ~UcxListener();
    UcxListener(const UcxListener&) = delete;
    UcxListener& operator=(const UcxListener&) = delete;

    // The next connection request, as a connection on a worker of its own. close() ends a
    // waiting accept() with closed.
    Task<Result<std::unique_ptr<UcxConnection>>> accept();
    uint16_t port() const { return port_; }
    bool is_loopback() const { return loopback_; }
    void close();

    struct Pending;  // connection requests UCX handed over, not yet accepted

private:
    UcxListener(std::shared_ptr<UcxWorker> worker, std::unique_ptr<Pending> pending);
    std::shared_ptr<UcxWorker> worker_;  // the listener's own: requests arrive on it
    std::unique_ptr<Pending> pending_;
    uint16_t port_ = 0;
    bool loopback_ = false;
    bool closed_ = false;
};

}  // namespace strata::transport
