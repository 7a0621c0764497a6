// The RDMA transport's settings (UcxOptions, asked) and what UCX made of them on a connection
// (UcxObserved). Plain structs, no UCX header: the pipeline reports them whether or not the
// library was built with UCX.
//
// UCX's UCP layer chooses the transports itself: RC or UD verbs on RoCE and InfiniBand, shared
// memory between processes of one host, TCP where there is nothing better. The settings below
// are what a RoCE deployment tunes (the path MTU, the inline size, the queue depths); on a
// machine without an RDMA device they are accepted and affect nothing.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "transport/error.hpp"
#include "transport/frame.hpp"

namespace strata::transport {

struct UcxOptions {
    std::string transports;  // UCX_TLS, e.g. "rc,sm,self" or "tcp"; "": UCX's choice among all it finds
    std::string devices;     // UCX_NET_DEVICES, e.g. "mlx5_0:1" or "eth0"; "": every device
    int mtu = 0;             // IB path MTU in bytes (512, 1024, 2048 or 4096); 0: the port's own
    int max_inline = 0;      // bytes sent inline in a work request (IB TX_MIN_INLINE); 0: UCX's default
    int rx_queue_len = 0;    // receive queue depth (IB RX_QUEUE_LEN); 0: UCX's default
    int tx_queue_len = 0;    // send queue depth (IB TX_QUEUE_LEN); 0: UCX's default
    uint64_t max_payload = kDefaultMaxPayload;

    // invalid_argument naming the field that is out of range.
    Status validate() const;
    // The UCX configuration these give, by UCX's names without the UCX_ prefix, in a fixed
    // order; only what differs from UCX's defaults ("IB_PATH_MTU" -> "4096").
    std::vector<std::pair<std::string, std::string>> settings() const;
};

// One lane of an endpoint: a transport on a device (UCX may use several, e.g. one for small
// messages and one for bandwidth).
struct UcxLane {
    std::string transport;  // "tcp", "rc_mlx5", "posix", ...
    std::string device;     // "lo", "mlx5_0:1", "memory"
    int mtu = 0;            // the network interface's MTU for TCP lanes; 0: unknown (IB, shared memory)
};

struct UcxObserved {
    std::string version;                // UCX's library version ("1.13.1")
    std::string local, remote;          // "addr:port" of the connection's socket addresses ("" unknown)
    std::string connection_manager;     // what set the connection up ("tcp", "rdmacm"; "" unknown)
    std::vector<UcxLane> lanes;         // what the endpoint sends on, as UCX reports it
    // The settings UCX was given (UcxOptions::settings()), then the transport and device lists
    // as UCX read them back ("TLS", "NET_DEVICES").
    std::vector<std::pair<std::string, std::string>> settings;
};

// Reads the lanes and connection manager out of ucp_ep_print_info's text (lines such as
// "lane[1]:  2:tcp/lo.0 md[1] -> ..." and "lane[0]: cm tcp"). Lines it does not know are skipped.
void parse_endpoint_info(const std::string& text, UcxObserved& out);

}  // namespace strata::transport
