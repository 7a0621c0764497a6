// TcpConnection and the handshake over loopback TCP: both sides run as coroutines on one
// io_context; results are checked after it has run, outside the coroutines.
#include <doctest/doctest.h>

#if STRATA_TRANSPORT_HAS_TCP

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <optional>
#include <random>

#include "test_support.hpp"
#include "transport/handshake.hpp"
#include "transport/tcp_connection.hpp"
#include "transport_test_util.hpp"

using namespace strata::transport;
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// A connected pair of sockets on 127.0.0.1.
struct Loopback {
    asio::io_context ctx;
    std::unique_ptr<TcpConnection> client, server;
    tcp::socket raw_client{ctx};  // for tests that write bytes the codec would never produce

    explicit Loopback(bool raw = false) {
        auto [c, s] = strata::transport::test::loopback_sockets(ctx);
        server = std::make_unique<TcpConnection>(std::move(s));
        if (raw)
            raw_client = std::move(c);
        else
            client = std::make_unique<TcpConnection>(std::move(c));
    }

    // Runs both coroutines to completion; an exception in either is rethrown here.
    template <typename A, typename B>
    void run(A a, B b) {
        auto rethrow = [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        };
        asio::co_spawn(ctx, std::move(a), rethrow);
        asio::co_spawn(ctx, std::move(b), rethrow);
        ctx.run();
        ctx.restart();
    }
};

HandshakeConfig config(const std::string& key, uint8_t model_byte = 0x42) {
    HandshakeConfig c;
    c.local.model_id.fill(model_byte);
    c.local.layer_begin = 10;
    c.local.layer_end = 20;
    c.local.kv_type = 1;
    c.local.context_length = 8192;
    c.key.assign(key.begin(), key.end());
    c.timeout = Timeout{2000};
    return c;
}

// Coroutine factories for net.run. GCC 12 mishandles temporaries that share a full
// expression with co_await, so every awaited result lands in a named local first.
auto receive_into(Connection& conn, std::optional<Result<Frame>>& out, Timeout t) {
    return [&conn, &out, t]() -> Task<void> {
        Result<Frame> r = co_await conn.receive_frame(t);
        out = std::move(r);
    };
}

auto send_into(Connection& conn, const Frame& f, std::optional<Status>& out, Timeout t) {
    return [&conn, &f, &out, t]() -> Task<void> {
        Status r = co_await conn.send_frame(f, t);
        out = std::move(r);
    };
}

Task<void> nothing() { co_return; }

struct HandshakeOutcome {
    std::optional<Result<Hello>> dialer, acceptor;
};

HandshakeOutcome handshake(Loopback& net, HandshakeConfig dial, HandshakeConfig accept) {
    HandshakeOutcome out;
    net.run(
        [&]() -> Task<void> {
            Result<Hello> r = co_await dial_handshake(*net.client, dial);
            out.dialer = std::move(r);
        },
        [&]() -> Task<void> {
            Result<Hello> r = co_await accept_handshake(*net.server, accept);
            out.acceptor = std::move(r);
        });
    return out;
}

}  // namespace

TEST_CASE("transport: peers with the same key and identity shake hands and then carry a tensor frame") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    Loopback net;
    auto out = handshake(net, config("shared secret"), config("shared secret"));
    REQUIRE(out.dialer->ok());
    REQUIRE(out.acceptor->ok());
    CHECK(out.dialer->value().layer_begin == 10);
    CHECK(out.acceptor->value().context_length == 8192);

    Tensor t{DType::bf16, {3, 5000}, std::vector<uint8_t>(3 * 5000 * 2)};
    for (auto& b : t.data) b = uint8_t(rng());
    const Frame frame = to_frame(t).value();
    std::optional<Status> sent;
    std::optional<Result<Frame>> got;
    net.run(send_into(*net.client, frame, sent, Timeout{2000}), receive_into(*net.server, got, Timeout{2000}));
    REQUIRE(sent->ok());
    REQUIRE(got->ok());
    auto m = from_frame(got->value());
    REQUIRE(m.ok());
    CHECK(std::get<Tensor>(m.value()) == t);
}

TEST_CASE("transport: a wrong pre-shared key is refused with auth_failed on both sides") {
    Loopback net;
    auto out = handshake(net, config("key one"), config("key two"));
    REQUIRE_FALSE(out.dialer->ok());
    REQUIRE_FALSE(out.acceptor->ok());
    CHECK(out.dialer->error().code == Errc::auth_failed);
    CHECK(out.acceptor->error().code == Errc::auth_failed);
}

TEST_CASE("transport: an acceptor refuses a dialer for another model or layer range with identity_mismatch on both sides") {
    Loopback net;
    HandshakeConfig dial = config("k", 0x42);
    SUBCASE("model identity") { dial = config("k", 0x43); }
    SUBCASE("layer range") { dial.local.layer_end = 21; }
    SUBCASE("context length") { dial.local.context_length = 4096; }
    auto out = handshake(net, dial, config("k", 0x42));
    REQUIRE_FALSE(out.dialer->ok());
    REQUIRE_FALSE(out.acceptor->ok());
    CHECK(out.dialer->error().code == Errc::identity_mismatch);
    CHECK(out.acceptor->error().code == Errc::identity_mismatch);
}

TEST_CASE("transport: a silent peer is detected by a 200 ms receive deadline, not before it, and the link stays usable") {
    Loopback net;
    std::optional<Result<Frame>> got;
    const auto start = std::chrono::steady_clock::now();
    net.run(receive_into(*net.server, got, Timeout{200}), nothing);  // the client says nothing
    const auto elapsed = std::chrono::steady_clock::now() - start;
    REQUIRE_FALSE(got->ok());
    CHECK(got->error().code == Errc::timed_out);
    CHECK(elapsed >= std::chrono::milliseconds(200));
    // Far below any default the deadline could be confused with; loose, because a sanitizer
    // build on a busy CI VM can be paused for hundreds of milliseconds.
    CHECK(elapsed < std::chrono::milliseconds(3000));

    const Frame heartbeat{MessageType::heartbeat, {}};
    std::optional<Status> sent;
    net.run(send_into(*net.client, heartbeat, sent, Timeout{1000}), receive_into(*net.server, got, Timeout{1000}));
    REQUIRE(sent->ok());
    REQUIRE(got->ok());
    CHECK(got->value().type == MessageType::heartbeat);
}

TEST_CASE("transport: a peer that closes cleanly gives closed; one that closes mid-frame gives truncated") {
    Loopback net(/*raw=*/true);
    std::optional<Result<Frame>> got;
    SUBCASE("clean close") {
        net.raw_client.close();
        net.run(receive_into(*net.server, got, Timeout{1000}), nothing);
        REQUIRE_FALSE(got->ok());
        CHECK(got->error().code == Errc::closed);
    }
    SUBCASE("mid-frame") {
        auto wire = encode_frame(MessageType::token, std::vector<uint8_t>{1, 2, 3, 4});
        asio::write(net.raw_client, asio::buffer(wire.data(), wire.size() - 2));
        net.raw_client.close();
        net.run(receive_into(*net.server, got, Timeout{1000}), nothing);
        REQUIRE_FALSE(got->ok());
        CHECK(got->error().code == Errc::truncated);
    }
}

TEST_CASE("transport: garbage on the wire is reported as bad_magic and closes the connection") {
    Loopback net(/*raw=*/true);
    const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    asio::write(net.raw_client, asio::buffer(junk));
    std::optional<Result<Frame>> got, again;
    net.run(
        [&]() -> Task<void> {
            Result<Frame> first = co_await net.server->receive_frame(Timeout{1000});
            got = std::move(first);
            Result<Frame> second = co_await net.server->receive_frame(Timeout{1000});
            again = std::move(second);
        },
        nothing);
    REQUIRE_FALSE(got->ok());
    CHECK(got->error().code == Errc::bad_magic);
    REQUIRE_FALSE(again->ok());
}

TEST_CASE("transport: an accept policy replaces the layout comparison and fills the reply") {
    Loopback net;
    HandshakeConfig dial = config("k");
    dial.local.layer_begin = 30;  // asks for layers the acceptor's `local` does not hold
    dial.local.layer_end = 61;
    dial.local.context_length = 4096;
    HandshakeConfig accept = config("k");
    accept.local.layer_begin = 0;
    accept.local.layer_end = 0;
    int calls = 0;
    accept.accept_policy = [&](const Hello& dialer, Hello& reply) -> Status {
        ++calls;
        reply.layer_begin = dialer.layer_begin;
        reply.layer_end = dialer.layer_end;
        reply.context_length = dialer.context_length;
        reply.model_id.fill(0x99);  // not the policy's to change: restored
        return Ok{};
    };
    auto out = handshake(net, dial, accept);
    REQUIRE(out.dialer->ok());
    REQUIRE(out.acceptor->ok());
    CHECK(calls == 1);
    CHECK(out.dialer->value().layer_begin == 30);
    CHECK(out.dialer->value().layer_end == 61);
    CHECK(out.dialer->value().context_length == 4096);
    CHECK(out.dialer->value().model_id == dial.local.model_id);
    CHECK(out.acceptor->value().layer_end == 61);
}

TEST_CASE("transport: an accept policy's refusal reaches the dialer; version and model are compared first") {
    Loopback net;
    HandshakeConfig dial = config("k");
    HandshakeConfig accept = config("k");
    int calls = 0;
    accept.accept_policy = [&](const Hello& dialer, Hello&) -> Status {
        ++calls;
        return make_error(Errc::identity_mismatch, "layers [" + std::to_string(dialer.layer_begin) + ", " +
                                                       std::to_string(dialer.layer_end) + ") exceed the budget");
    };
    SUBCASE("the policy refuses") {
        auto out = handshake(net, dial, accept);
        REQUIRE_FALSE(out.dialer->ok());
        REQUIRE_FALSE(out.acceptor->ok());
        CHECK(calls == 1);
        CHECK(out.dialer->error().code == Errc::identity_mismatch);
        CHECK(out.dialer->error().detail.find("layers [10, 20) exceed the budget") != std::string::npos);
        CHECK(out.acceptor->error().code == Errc::identity_mismatch);
    }
    SUBCASE("another model never reaches the policy") {
        dial = config("k", 0x01);
        auto out = handshake(net, dial, accept);
        REQUIRE_FALSE(out.dialer->ok());
        CHECK(calls == 0);
        CHECK(out.dialer->error().code == Errc::identity_mismatch);
        CHECK(out.dialer->error().detail.find("model identity") != std::string::npos);
    }
    SUBCASE("a reply with a reversed range is refused, not sent") {
        accept.accept_policy = [&](const Hello&, Hello& reply) -> Status {
            ++calls;
            reply.layer_begin = 5;
            reply.layer_end = 4;
            return Ok{};
        };
        auto out = handshake(net, dial, accept);
        REQUIRE_FALSE(out.dialer->ok());
        REQUIRE_FALSE(out.acceptor->ok());
        CHECK(out.acceptor->error().code == Errc::invalid_argument);
        CHECK(out.dialer->error().code == Errc::invalid_argument);
    }
}

#endif  // STRATA_TRANSPORT_HAS_TCP
