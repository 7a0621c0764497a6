// Typed sends: a message encoded and put on a Connection as one frame. Tensors and forwards go
// out as their small encoded head plus their elements straight from the message (send_parts),
// so a hidden state is never copied into a frame buffer first.
#pragma once

#include "transport/connection.hpp"
#include "transport/messages.hpp"

namespace strata::transport {

// Errors: the encoder's (malformed_payload: nothing a correct peer would refuse is sent), then
// the connection's. The message must outlive the co_await, so temporaries are refused (GCC 12
// also mishandles temporaries in a co_await expression): name the message first.
Task<Status> send_message(Connection& conn, const Message& m, Timeout timeout);
Task<Status> send_message(Connection& conn, const Tensor& t, Timeout timeout);
Task<Status> send_message(Connection& conn, const Forward& f, Timeout timeout);
Task<Status> send_message(Connection&, Message&&, Timeout) = delete;
Task<Status> send_message(Connection&, Tensor&&, Timeout) = delete;
Task<Status> send_message(Connection&, Forward&&, Timeout) = delete;

}  // namespace strata::transport
