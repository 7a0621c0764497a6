// The transport fields that strata_pipeline_params and strata_worker_params share: the name
// and the rdma settings, read into the pipeline's options and checked here.
#pragma once

#include <cstdint>

#include "transport/link_kind.hpp"
#include "transport/ucx/ucx_options.hpp"

namespace strata::capi {

struct LinkFields {
    const char* transport;
    const char* rdma_transports;
    const char* rdma_devices;
    int32_t rdma_mtu, rdma_max_inline, rdma_rx_queue_len, rdma_tx_queue_len;
};

// Throws Error(invalid_argument) naming the field: an unknown transport, an rdma setting out
// of range. NULL transport: tcp (the TLS files may still make it tls).
void read_link_fields(const LinkFields& f, transport::LinkKind& kind, transport::UcxOptions& rdma);

template <typename Params>
LinkFields link_fields(const Params& p) {
    return {p.transport,        p.rdma_transports, p.rdma_devices,      p.rdma_mtu,
            p.rdma_max_inline,  p.rdma_rx_queue_len, p.rdma_tx_queue_len};
}

}  // namespace strata::capi
