#include "pipeline/link_options.hpp"

#include "util/error.hpp"

namespace strata::pipeline {

transport::LinkKind resolve_link_kind(transport::LinkKind asked, const transport::TlsOptions& tls) {
    using transport::LinkKind;
    LinkKind kind = asked;
    if (kind == LinkKind::tcp && tls.enabled()) kind = LinkKind::tls;
    if (kind == LinkKind::tls && !tls.enabled())
        fail(Status::invalid_argument, "transport tls needs TLS files (a CA file to check workers with on the "
                                       "head; a certificate and key on a worker)");
    if ((kind == LinkKind::rdma || kind == LinkKind::nccl) && tls.enabled())
        fail(Status::invalid_argument, std::string("transport ") + transport::to_string(kind) +
                                           " does not run inside TLS (TLS runs over tcp): drop the TLS files or "
                                           "use transport tls");
    if (const std::string why = transport::link_kind_unavailable(kind); !why.empty())
        fail(Status::unsupported, why);
    return kind;
}

}  // namespace strata::pipeline
