// The transport a head or worker was asked for, checked against its TLS settings and against
// what this build has, before anything is dialed or bound.
#pragma once

#include "transport/link_kind.hpp"
#include "transport/tls.hpp"

namespace strata::pipeline {

// tcp with TLS files set becomes tls (the TLS files alone chose TLS before --transport
// existed). Throws Error: invalid_argument for tls without TLS files or rdma/nccl with them
// (TLS runs over TCP), unsupported naming the transport when this build lacks it.
transport::LinkKind resolve_link_kind(transport::LinkKind asked, const transport::TlsOptions& tls);

}  // namespace strata::pipeline
