// Endpoints, dialing and listening on loopback, socket settings as observed, and the heartbeat.
#include <doctest/doctest.h>

#if STRATA_TRANSPORT_HAS_TCP

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <functional>
#include <optional>

#include "transport/tcp.hpp"
#include "transport_test_util.hpp"

using namespace strata::transport;
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using strata::transport::test::run_all;

namespace {

using ConnResult = Result<std::unique_ptr<TcpConnection>>;

// Listens on 127.0.0.1:0, dials it, and returns both ends.
struct DialedPair {
    asio::io_context ctx;
    std::optional<TcpListener> listener;
    std::optional<ConnResult> dialed, accepted;

    explicit DialedPair(TcpOptions options = {}) {
        auto l = TcpListener::bind(ctx.get_executor(), Endpoint{"127.0.0.1", 0}, options);
        REQUIRE(l.ok());
        listener.emplace(std::move(l.value()));
        const Endpoint to{"127.0.0.1", listener->port()};
        run_all(ctx, {[&, to, options]() -> Task<void> {
                          const asio::any_io_executor ex = ctx.get_executor();
                          ConnResult r = co_await tcp_dial(ex, to, options, Timeout{2000});
                          dialed.emplace(std::move(r));
                      },
                      [&]() -> Task<void> {
                          ConnResult r = co_await listener->accept();
                          accepted.emplace(std::move(r));
                      }});
        REQUIRE(dialed->ok());
        REQUIRE(accepted->ok());
    }
    TcpConnection& client() { return *dialed->value(); }
    TcpConnection& server() { return *accepted->value(); }
};

}  // namespace

TEST_CASE("transport: endpoints parse as HOST:PORT or [V6]:PORT, with a reason for every refusal") {
    auto ok = [](std::string_view text, const std::string& host, uint16_t port) {
        auto e = parse_endpoint(text);
        REQUIRE(e.ok());
        CHECK(e.value().host == host);
        CHECK(e.value().port == port);
    };
    ok("127.0.0.1:7001", "127.0.0.1", 7001);
    ok("node-2.cluster:80", "node-2.cluster", 80);
    ok("[::1]:65535", "::1", 65535);
    ok("localhost:0", "localhost", 0);
    CHECK(parse_endpoint("[::1]:9").value().to_string() == "[::1]:9");
    CHECK(parse_endpoint("h:9").value().to_string() == "h:9");

    auto refused = [](std::string_view text, const std::string& why) {
        auto e = parse_endpoint(text);
        REQUIRE_FALSE(e.ok());
        CHECK(e.error().code == Errc::invalid_argument);
        CHECK_MESSAGE(e.error().detail.find(why) != std::string::npos, e.error().detail);
    };
    refused("", "empty");
    refused("host", "missing port");
    refused("host:", "missing port");
    refused(":80", "empty host");
    refused("[]:80", "empty host");
    refused("[::1]", "missing port");
    refused("[::1]80", "missing port");
    refused("[::1:80", "missing ']'");
    refused("::1:80", "brackets");
    refused("h:65536", "out of range");
    refused("h:99999999999999999999999", "out of range");
    refused("h:8x", "not a number");
    refused("h:-1", "not a number");
}

TEST_CASE("transport: dial and listen on 127.0.0.1:0 carry frames both ways with options applied") {
    TcpOptions options;
    options.send_buffer = 1 << 16;
    options.receive_buffer = 1 << 16;
    DialedPair net(options);
    CHECK(net.listener->port() != 0);
    CHECK(net.listener->is_loopback());

    const Frame ping{MessageType::token, {7, 0, 0, 0}};
    std::optional<Result<Frame>> got, back;
    run_all(net.ctx, {[&]() -> Task<void> {
                          Status s = co_await net.client().send_frame(ping, Timeout{1000});
                          (void)s;
                          Result<Frame> r = co_await net.client().receive_frame(Timeout{1000});
                          back.emplace(std::move(r));
                      },
                      [&]() -> Task<void> {
                          Result<Frame> r = co_await net.server().receive_frame(Timeout{1000});
                          got.emplace(std::move(r));
                          if (!got->ok()) co_return;
                          Status s = co_await net.server().send_frame(got->value(), Timeout{1000});
                          (void)s;
                      }});
    REQUIRE(got->ok());
    REQUIRE(back->ok());
    CHECK(back->value().payload == ping.payload);

    for (TcpConnection* c : {&net.client(), &net.server()}) {
        const SocketObserved o = c->observed();
        CAPTURE(o.local);
        CAPTURE(o.remote);
        CHECK(o.send_buffer >= options.send_buffer);  // Linux doubles what was asked
        CHECK(o.receive_buffer >= options.receive_buffer);
        CHECK(o.no_delay);
        CHECK(o.interface == "lo");
        CHECK(o.mtu > 0);
        CHECK(o.local.starts_with("127.0.0.1:"));
        CHECK(o.remote.starts_with("127.0.0.1:"));
    }
    CHECK(net.client().observed().remote == "127.0.0.1:" + std::to_string(net.listener->port()));
}

TEST_CASE("transport: dialing a closed port fails fast with io naming the endpoint") {
    asio::io_context ctx;
    uint16_t port = 0;
    {
        auto l = TcpListener::bind(ctx.get_executor(), Endpoint{"127.0.0.1", 0}, {});
        REQUIRE(l.ok());
        port = l.value().port();
        l.value().close();
    }
    std::optional<ConnResult> dialed;
    const auto start = Clock::now();
    run_all(ctx, {[&]() -> Task<void> {
                // Named arguments only: GCC 12 destroys temporaries beside co_await twice.
                const asio::any_io_executor ex = ctx.get_executor();
                const Endpoint to{"127.0.0.1", port};
                const TcpOptions options;
                ConnResult r = co_await tcp_dial(ex, to, options, Timeout{5000});
                dialed.emplace(std::move(r));
            }});
    // Refused at once, not after the 5 s timeout; 3 s leaves room for a paused VM.
    CHECK(Clock::now() - start < std::chrono::seconds(3));
    REQUIRE_FALSE(dialed->ok());
    CHECK(dialed->error().code == Errc::io);
    CHECK(dialed->error().detail.find("connection refused") != std::string::npos);
    CHECK(dialed->error().detail.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
}

TEST_CASE("transport: binding a port in use is io naming the endpoint; a closed listener refuses accept") {
    asio::io_context ctx;
    auto first = TcpListener::bind(ctx.get_executor(), Endpoint{"127.0.0.1", 0}, {});
    REQUIRE(first.ok());
    const uint16_t port = first.value().port();
    auto second = TcpListener::bind(ctx.get_executor(), Endpoint{"127.0.0.1", port}, {});
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().code == Errc::io);
    CHECK(second.error().detail.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);

    auto unresolvable = TcpListener::bind(ctx.get_executor(), Endpoint{"", 1}, {});
    CHECK_FALSE(unresolvable.ok());

    // close() while an accept waits: the accept ends with closed.
    std::optional<ConnResult> accepted;
    asio::steady_timer timer(ctx);
    run_all(ctx, {[&]() -> Task<void> {
                      ConnResult r = co_await first.value().accept();
                      accepted.emplace(std::move(r));
                  },
                  [&]() -> Task<void> {
                      timer.expires_after(std::chrono::milliseconds(20));
                      co_await timer.async_wait(asio::use_awaitable);
                      first.value().close();
                  }});
    REQUIRE_FALSE(accepted->ok());
    CHECK(accepted->error().code == Errc::closed);
}

TEST_CASE("transport: heartbeat_loop beats every interval and stops on its flag or a failed send") {
    DialedPair net;
    auto stop = std::make_shared<std::atomic<bool>>(false);
    int beats = 0;
    Clock::time_point stopped_at{}, loop_ended{};
    run_all(net.ctx, {[&]() -> Task<void> {
                          co_await heartbeat_loop(net.client(), Timeout{20}, stop);
                          loop_ended = Clock::now();
                      },
                      [&]() -> Task<void> {
                          while (beats < 5) {
                              Result<Frame> r = co_await net.server().receive_frame(Timeout{1000});
                              if (!r || r.value().type != MessageType::heartbeat) co_return;
                              ++beats;
                          }
                          stop->store(true);
                          stopped_at = Clock::now();
                      }});
    CHECK(beats == 5);
    REQUIRE(loop_ended != Clock::time_point{});
    // It stops at its next 20 ms beat, not never; 1 s leaves room for a paused VM.
    CHECK(loop_ended - stopped_at < std::chrono::milliseconds(1000));

    // A closed connection ends the loop by itself.
    auto never = std::make_shared<std::atomic<bool>>(false);
    net.client().close();
    bool ended = false;
    run_all(net.ctx, {[&]() -> Task<void> {
                co_await heartbeat_loop(net.client(), Timeout{5}, never);
                ended = true;
            }});
    CHECK(ended);
}

#endif  // STRATA_TRANSPORT_HAS_TCP
