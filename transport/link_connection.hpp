// What callers above the interface may ask of any connection a pipeline link runs on, whatever
// carries it: whether it is open, its frame byte counters, the peer's address, and the settings
// of the transport underneath as observed (TCP socket, TLS session, UCX endpoint).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "transport/connection.hpp"
#include "transport/socket_options.hpp"
#include "transport/ucx/ucx_options.hpp"

namespace strata::transport {

// What TLS agreed on a connection, as OpenSSL reports it ("TLSv1.3", "TLS_AES_256_GCM_SHA384").
struct TlsObserved {
    std::string version;
    std::string cipher;
};

class LinkConnection : public Connection {
public:
    virtual bool is_open() const = 0;
    // Frame bytes, headers included, since the connection was made: what the connection wrote
    // and read as frames (inside TLS for TLS; what UCX was given and gave back for UCX).
    uint64_t bytes_sent() const { return bytes_sent_.load(std::memory_order_relaxed); }
    uint64_t bytes_received() const { return bytes_received_.load(std::memory_order_relaxed); }
    // "tcp", "tls" or "rdma": the transport kind as the pipeline's options name it.
    virtual const char* kind() const = 0;
    // The peer's address, "addr:port" ("" when unknown).
    virtual std::string remote() const = 0;
    // Whichever of these describe the transport underneath; the others are empty.
    virtual std::optional<SocketObserved> socket() const { return std::nullopt; }
    virtual std::optional<TlsObserved> tls() const { return std::nullopt; }
    virtual std::optional<UcxObserved> ucx() const { return std::nullopt; }

protected:
    std::atomic<uint64_t> bytes_sent_{0}, bytes_received_{0};
};

}  // namespace strata::transport
