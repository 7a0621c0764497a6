#include "transport/link_kind.hpp"

namespace strata::transport {

const char* to_string(LinkKind kind) {
    switch (kind) {
        case LinkKind::tcp: return "tcp";
        case LinkKind::tls: return "tls";
        case LinkKind::rdma: return "rdma";
        case LinkKind::nccl: return "nccl";
    }
    return "unknown";
}

Result<LinkKind> parse_link_kind(std::string_view text) {
    for (LinkKind k : {LinkKind::tcp, LinkKind::tls, LinkKind::rdma, LinkKind::nccl})
        if (text == to_string(k)) return k;
    return make_error(Errc::invalid_argument,
                      "unknown transport \"" + std::string(text) + "\": expected tcp, tls, rdma or nccl");
}

std::string link_kind_unavailable(LinkKind kind) {
    switch (kind) {
        case LinkKind::tcp:
        case LinkKind::tls:
            return STRATA_TRANSPORT_HAS_TCP ? ""
                                            : "transport " + std::string(to_string(kind)) +
                                                  ": this library was built without Boost.Asio coroutines";
        case LinkKind::rdma:
            return STRATA_TRANSPORT_HAS_UCX ? ""
                                            : "transport rdma: this library was built without UCX (install "
                                              "libucx-dev and rebuild with STRATA_WITH_UCX=ON)";
        case LinkKind::nccl:
            // The set-up over the TCP control channel is not written yet; nothing pretends otherwise.
            return "transport nccl: not implemented in this version of strata (GPU stages exchange hidden "
                   "states over tcp, tls or rdma)";
    }
    return "unknown transport";
}

}  // namespace strata::transport
