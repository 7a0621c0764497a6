#include "capi/link.hpp"

#include "capi/guard.hpp"
#include "strata/strata.h"
#include "util/error.hpp"

namespace strata::capi {

void read_link_fields(const LinkFields& f, transport::LinkKind& kind, transport::UcxOptions& rdma) {
    kind = transport::LinkKind::tcp;
    if (f.transport) {
        auto parsed = transport::parse_link_kind(f.transport);
        if (!parsed) fail(Status::invalid_argument, "transport: " + parsed.error().detail);
        kind = parsed.value();
    }
    rdma.transports = f.rdma_transports ? f.rdma_transports : "";
    rdma.devices = f.rdma_devices ? f.rdma_devices : "";
    rdma.mtu = f.rdma_mtu;
    rdma.max_inline = f.rdma_max_inline;
    rdma.rx_queue_len = f.rdma_rx_queue_len;
    rdma.tx_queue_len = f.rdma_tx_queue_len;
    if (auto st = rdma.validate(); !st) fail(Status::invalid_argument, st.error().detail);
}

}  // namespace strata::capi

extern "C" strata_status strata_transport_available(const char* transport) {
    STRATA_API_BEGIN
    const char* name = strata::capi::require(transport, "transport");
    auto kind = strata::transport::parse_link_kind(name);
    if (!kind) strata::fail(strata::Status::invalid_argument, kind.error().detail);
    if (const std::string why = strata::transport::link_kind_unavailable(kind.value()); !why.empty())
        strata::fail(strata::Status::unsupported, why);
    STRATA_API_END
}
