// The transports a pipeline link can run on, by the names the options use ("tcp", "tls",
// "rdma", "nccl"), and whether this build has each.
#pragma once

#include <string>
#include <string_view>

#include "transport/error.hpp"

namespace strata::transport {

enum class LinkKind { tcp, tls, rdma, nccl };

const char* to_string(LinkKind kind);
// invalid_argument naming the text and the names there are.
Result<LinkKind> parse_link_kind(std::string_view text);
// "" when this build can carry links of `kind`; otherwise why not, naming the transport
// and what is missing ("transport rdma: this library was built without UCX ...").
std::string link_kind_unavailable(LinkKind kind);

}  // namespace strata::transport
