// Error answers of a worker: library errors travel as kLibraryStatusBase + strata::Status, protocol
// errors as the transport's Errc, both with a message cut to what the wire carries.
#pragma once

#include <string>

#include "transport/messages.hpp"
#include "util/error.hpp"

namespace strata::pipeline::detail {

transport::ErrorMessage error_reply(Status status, const std::string& message);
transport::ErrorMessage error_reply(const transport::Error& error);
// Inside a catch block: the answer for the exception being handled.
transport::ErrorMessage current_exception_reply();
// "invalid_argument: ..." for log lines.
std::string describe(const transport::ErrorMessage& m);

}  // namespace strata::pipeline::detail
