// The transport flags strata-worker, strata-run and strata-bench share: --transport and the
// rdma settings, into the fields strata_pipeline_params and strata_worker_params both have.
#pragma once

#include <optional>
#include <string>

#include "common/cli_args.hpp"

namespace cli {

struct TransportArgs {
    std::string transport;  // "" : the library's default (tcp, or tls with TLS files)
    std::string rdma_transports, rdma_devices;
    int rdma_mtu = 0, rdma_max_inline = 0, rdma_rx_queue_len = 0, rdma_tx_queue_len = 0;
};

// The flags' usage lines, as a literal to splice into a program's usage text.
#define STRATA_CLI_TRANSPORT_USAGE \
    "  --transport tcp|tls|rdma  what links run on (default tcp; tls with the TLS files); rdma: UCX\n" \
    "                         (RC/UD verbs on RoCE and InfiniBand, shared memory or TCP without a device)\n" \
    "  --rdma-transports L    rdma: UCX_TLS, e.g. rc,sm,self (default: UCX's choice)\n" \
    "  --rdma-devices L       rdma: UCX_NET_DEVICES, e.g. mlx5_0:1 (default: every device)\n" \
    "  --rdma-mtu N           rdma: InfiniBand path MTU, 512..4096 (default: the port's)\n" \
    "  --rdma-inline N        rdma: bytes sent inline in a work request (default: UCX's)\n" \
    "  --rdma-rx-queue N      rdma: receive queue depth (default: UCX's)\n" \
    "  --rdma-tx-queue N      rdma: send queue depth (default: UCX's)\n"

// True when argv[i] was one of the transport flags (its value consumed).
inline bool parse_transport_flag(int argc, char** argv, int& i, TransportArgs& t) {
    const std::string a = argv[i];
    auto number = [&](int& out) {
        const std::string v = value(argc, argv, i);
        const std::optional<long long> n = to_number<long long>(v);
        if (!n || *n < 0 || *n > 65536) throw usage_error(a + " needs an integer from 0 to 65536, got '" + v + "'");
        out = int(*n);
    };
    if (a == "--transport") t.transport = value(argc, argv, i);
    else if (a == "--rdma-transports") t.rdma_transports = value(argc, argv, i);
    else if (a == "--rdma-devices") t.rdma_devices = value(argc, argv, i);
    else if (a == "--rdma-mtu") number(t.rdma_mtu);
    else if (a == "--rdma-inline") number(t.rdma_max_inline);
    else if (a == "--rdma-rx-queue") number(t.rdma_rx_queue_len);
    else if (a == "--rdma-tx-queue") number(t.rdma_tx_queue_len);
    else return false;
    return true;
}

// Points the params' transport fields at `t` (which must outlive them).
template <typename Params>
void apply_transport(const TransportArgs& t, Params& p) {
    p.transport = t.transport.empty() ? nullptr : t.transport.c_str();
    p.rdma_transports = t.rdma_transports.empty() ? nullptr : t.rdma_transports.c_str();
    p.rdma_devices = t.rdma_devices.empty() ? nullptr : t.rdma_devices.c_str();
    p.rdma_mtu = t.rdma_mtu;
    p.rdma_max_inline = t.rdma_max_inline;
    p.rdma_rx_queue_len = t.rdma_rx_queue_len;
    p.rdma_tx_queue_len = t.rdma_tx_queue_len;
}

}  // namespace cli
