// Helpers the transport tests share: a message's round trip through the wire and a payload's
// refusal by the decoder; with TCP, coroutines run to completion on an io_context and a
// connected pair of loopback sockets.
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "transport/messages.hpp"

#if STRATA_TRANSPORT_HAS_TCP
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <exception>
#include <functional>

#include "transport/tcp_connection.hpp"
#endif

namespace strata::transport::test {

// Message -> frame -> wire -> frame -> message.
inline Message round_trip(const Message& m) {
    auto f = to_frame(m);
    REQUIRE(f.ok());
    auto wire = encode_frame(f.value());
    auto back = decode_frame(wire);
    REQUIRE(back.ok());
    CHECK(back.value().type == message_type(m));
    auto msg = from_frame(back.value());
    REQUIRE(msg.ok());
    return msg.value();
}

// The error the decoder gives a message of TYPE with PAYLOAD (which it must refuse).
inline Errc decode_error(MessageType type, std::vector<uint8_t> payload) {
    auto m = from_frame(Frame{type, std::move(payload)});
    REQUIRE_FALSE(m.ok());
    return m.error().code;
}

#if STRATA_TRANSPORT_HAS_TCP

// Runs every coroutine to completion on CTX; an exception in any is rethrown here.
inline void run_all(boost::asio::io_context& ctx, const std::vector<std::function<Task<void>()>>& tasks) {
    for (const auto& t : tasks)
        boost::asio::co_spawn(ctx, t(), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    ctx.run();
    ctx.restart();
}

// A connected pair of sockets on 127.0.0.1: {client, server}.
inline std::pair<boost::asio::ip::tcp::socket, boost::asio::ip::tcp::socket> loopback_sockets(
    boost::asio::io_context& ctx) {
    using boost::asio::ip::tcp;
    tcp::acceptor acceptor(ctx, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
    tcp::socket client(ctx);
    client.connect(acceptor.local_endpoint());
    tcp::socket server = acceptor.accept();
    return {std::move(client), std::move(server)};
}

#endif

}  // namespace strata::transport::test
