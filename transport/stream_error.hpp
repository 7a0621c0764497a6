// Socket and TLS errors as transport Errors (shared by the stream connections and the dialers).
#pragma once

#include <boost/system/error_code.hpp>

#include "transport/connection.hpp"

namespace strata::transport {

// timed_out when the operation's own deadline cancelled it; closed when the peer closed (end
// of stream, reset, broken pipe, a TLS stream cut without close_notify); tls_failed with
// OpenSSL's reason for TLS errors; io otherwise. `what` prefixes the detail ("send").
Error stream_error(const boost::system::error_code& ec, bool deadline_fired, Timeout timeout, const char* what);
bool peer_closed(const boost::system::error_code& ec);

}  // namespace strata::transport
