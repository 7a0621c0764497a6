#include "transport/send.hpp"

#include <array>

namespace strata::transport {
namespace {

Task<Status> send_payload(Connection& conn, const PayloadParts& p, Timeout timeout) {
    const std::array<std::span<const uint8_t>, 2> pieces{std::span<const uint8_t>(p.head), p.tail};
    Status st = co_await conn.send_parts(p.type, pieces, timeout);
    co_return st;
}

}  // namespace

// Each overload names its parts and passes references (GCC 12: no temporaries beside co_await).

Task<Status> send_message(Connection& conn, const Message& m, Timeout timeout) {
    Result<PayloadParts> parts = to_payload_parts(m);
    if (!parts) co_return parts.error();
    Status st = co_await send_payload(conn, parts.value(), timeout);
    co_return st;
}

Task<Status> send_message(Connection& conn, const Tensor& t, Timeout timeout) {
    Result<PayloadParts> parts = to_payload_parts(t);
    if (!parts) co_return parts.error();
    Status st = co_await send_payload(conn, parts.value(), timeout);
    co_return st;
}

Task<Status> send_message(Connection& conn, const Forward& f, Timeout timeout) {
    Result<PayloadParts> parts = to_payload_parts(f);
    if (!parts) co_return parts.error();
    Status st = co_await send_payload(conn, parts.value(), timeout);
    co_return st;
}

}  // namespace strata::transport
