// The rdma transport (UCX) over loopback: on a machine without an RDMA device UCX carries the
// stream over TCP (or shared memory), so these tests run the code the RDMA path runs above
// UCT: the connection set-up, the stream sends and receives, deadlines, error handling.
#include <doctest/doctest.h>

#include "transport/ucx/ucx_options.hpp"

TEST_CASE("ucx: the endpoint description gives each lane's transport and device, and the connection manager") {
    const std::string text =
        "#\n# UCP endpoint \n#\n#               peer: <no debug data>\n"
        "#                 lane[0]: cm rdmacm\n"
        "#                 lane[1]:  2:tcp/lo.0 md[1]                -> md[1]/tcp/sysdev[255] am am_bw#0 wireup\n"
        "#                 lane[2]:  5:rc_mlx5/mlx5_0:1.0 md[3]       -> md[3]/ib/sysdev[1] rma_bw#0\n"
        "#                 lane[3]:  6:rc_mlx5/mlx5_0:1.0 md[3]       -> md[3]/ib/sysdev[1] am\n"
        "#             stream_send: 0..<egr/short>..8185..<egr/zcopy>..(inf)\n";
    strata::transport::UcxObserved o;
    strata::transport::parse_endpoint_info(text, o);
    CHECK(o.connection_manager == "rdmacm");
    REQUIRE(o.lanes.size() == 2);  // one entry per transport and device
    CHECK(o.lanes[0].transport == "tcp");
    CHECK(o.lanes[0].device == "lo");
    CHECK(o.lanes[1].transport == "rc_mlx5");
    CHECK(o.lanes[1].device == "mlx5_0:1");
    strata::transport::UcxObserved none;
    strata::transport::parse_endpoint_info("nothing here\n", none);
    CHECK(none.lanes.empty());
}

TEST_CASE("ucx: options outside what UCX takes are refused naming the field; set ones become UCX settings") {
    using strata::transport::UcxOptions;
    UcxOptions o;
    CHECK(o.validate().ok());
    CHECK(o.settings().empty());
    o.mtu = 1500;
    REQUIRE_FALSE(o.validate().ok());
    CHECK(o.validate().error().detail.find("mtu 1500") != std::string::npos);
    o.mtu = 4096;
    o.max_inline = 316;
    o.rx_queue_len = 24;
    o.transports = "rc,sm,self";
    CHECK(o.validate().ok());
    const auto s = o.settings();
    REQUIRE(s.size() == 4);
    CHECK(s[0] == std::pair<std::string, std::string>{"TLS", "rc,sm,self"});
    CHECK(s[1] == std::pair<std::string, std::string>{"IB_PATH_MTU", "4096"});
    CHECK(s[2] == std::pair<std::string, std::string>{"IB_TX_MIN_INLINE", "316"});
    CHECK(s[3] == std::pair<std::string, std::string>{"IB_RX_QUEUE_LEN", "24"});
    o.rx_queue_len = -1;
    CHECK_FALSE(o.validate().ok());
    o.rx_queue_len = 0;
    o.devices = "eth0;rm -rf";
    CHECK_FALSE(o.validate().ok());
}

#if STRATA_TRANSPORT_HAS_UCX

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <optional>
#include <functional>
#include <random>

#include "test_support.hpp"
#include "transport/handshake.hpp"
#include "transport/send.hpp"
#include "transport/ucx/ucx.hpp"

using namespace strata::transport;
namespace asio = boost::asio;

namespace {

std::shared_ptr<UcxContext> context(UcxOptions options = {}) {
    auto made = UcxContext::make(options);
    REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().detail));
    return made.value();
}

// A dialed and an accepted UCX connection on 127.0.0.1, on one io_context.
// Runs `tasks` on `ctx` until every one has finished, then stops it for the next run.
void run_until_done(asio::io_context& ctx, std::vector<std::function<Task<void>()>> tasks) {
    size_t left = tasks.size();
    std::exception_ptr failure;
    for (auto& t : tasks)
        asio::co_spawn(ctx, t(), [&](std::exception_ptr e) {
            if (e && !failure) failure = e;
            if (--left == 0) ctx.stop();
        });
    ctx.run();
    ctx.restart();
    if (failure) std::rethrow_exception(failure);
}

// The listening side's context has `listen_options`; the dialing side's, UCX's defaults.
struct Loopback {
    asio::io_context ctx;
    std::shared_ptr<UcxContext> ucx = context();
    std::shared_ptr<UcxContext> listen_ucx;
    std::unique_ptr<UcxListener> listener;
    std::unique_ptr<UcxConnection> client, server;

    explicit Loopback(const UcxOptions& listen_options = {}) : listen_ucx(context(listen_options)) {
        auto bound = UcxListener::bind(ctx.get_executor(), {"127.0.0.1", 0}, listen_ucx);
        REQUIRE_MESSAGE(bound.ok(), (bound.ok() ? "" : bound.error().detail));
        listener = std::move(bound.value());
        REQUIRE(listener->port() != 0);
        CHECK(listener->is_loopback());
        std::optional<Result<std::unique_ptr<UcxConnection>>> dialed, accepted;
        run(
            [&]() -> Task<void> {
                const Endpoint to{"127.0.0.1", listener->port()};
                auto ex = ctx.get_executor();
                auto r = co_await ucx_dial(ex, to, ucx, Timeout{5000});
                dialed = std::move(r);
            },
            [&]() -> Task<void> {
                auto r = co_await listener->accept();
                accepted = std::move(r);
            });
        REQUIRE_MESSAGE(dialed->ok(), (dialed->ok() ? "" : dialed->error().detail));
        REQUIRE_MESSAGE(accepted->ok(), (accepted->ok() ? "" : accepted->error().detail));
        client = std::move(dialed->value());
        server = std::move(accepted->value());
    }

    // Runs until both coroutines are done (the workers' pumps run on, so run() would not
    // return by itself); an exception in either is rethrown here.
    template <typename A, typename B>
    void run(A a, B b) { run_until_done(ctx, {std::move(a), std::move(b)}); }
};

HandshakeConfig config(const std::string& key) {
    HandshakeConfig c;
    c.local.model_id.fill(0x42);
    c.local.layer_begin = 10;
    c.local.layer_end = 20;
    c.local.kv_type = 1;
    c.local.context_length = 8192;
    c.key.assign(key.begin(), key.end());
    c.timeout = Timeout{3000};
    return c;
}

Task<void> nothing() { co_return; }

}  // namespace

TEST_CASE("ucx: peers shake hands and carry frames of random bytes whole, in order, counted on both sides") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    Loopback net;
    std::optional<Result<Hello>> dialer, acceptor;
    net.run(
        [&]() -> Task<void> {
            auto r = co_await dial_handshake(*net.client, config("k"));
            dialer = std::move(r);
        },
        [&]() -> Task<void> {
            auto r = co_await accept_handshake(*net.server, config("k"));
            acceptor = std::move(r);
        });
    REQUIRE(dialer->ok());
    REQUIRE(acceptor->ok());

    // Sizes across UCX's protocols: inline/short, copied, zero-copy, and several MiB.
    std::vector<std::vector<uint8_t>> payloads;
    for (size_t size : {size_t(0), size_t(1), size_t(100), size_t(8191), size_t(70000), size_t(3u << 20) + 17}) {
        std::vector<uint8_t> p(size);
        for (auto& b : p) b = uint8_t(rng());
        payloads.push_back(std::move(p));
    }
    std::vector<Result<Frame>> got;
    std::vector<Status> sent;
    net.run(
        [&]() -> Task<void> {
            for (const auto& p : payloads) {
                // Two parts: the frame leaves from both buffers as they are.
                const size_t half = p.size() / 2;
                const std::span<const uint8_t> parts[2] = {std::span(p).first(half), std::span(p).subspan(half)};
                Status st = co_await net.client->send_parts(MessageType::tensor, parts, Timeout{5000});
                sent.push_back(std::move(st));
            }
        },
        [&]() -> Task<void> {
            for (size_t i = 0; i < payloads.size(); ++i) {
                Result<Frame> r = co_await net.server->receive_frame(Timeout{5000});
                got.push_back(std::move(r));
            }
        });
    REQUIRE(got.size() == payloads.size());
    for (size_t i = 0; i < payloads.size(); ++i) {
        CAPTURE(i);
        REQUIRE(sent[i].ok());
        REQUIRE_MESSAGE(got[i].ok(), (got[i].ok() ? "" : got[i].error().detail));
        CHECK(got[i].value().type == MessageType::tensor);
        CHECK(got[i].value().payload == payloads[i]);
    }
    CHECK(net.client->bytes_sent() == net.server->bytes_received());
    CHECK(net.server->bytes_sent() == net.client->bytes_received());
    CHECK(net.client->bytes_sent() > (3u << 20));
}

TEST_CASE("ucx: frames from two senders at once arrive whole and in each sender's order") {
    Loopback net;
    constexpr int kEach = 40;
    std::vector<int> from_a, from_b;
    bool receive_ok = true;
    auto sender = [&](uint8_t tag) -> Task<void> {
        for (int i = 0; i < kEach; ++i) {
            std::vector<uint8_t> p(size_t(1000 + 997 * i), tag);
            p[0] = uint8_t(i);
            const Frame frame{MessageType::tensor, p};  // named: GCC 12 destroys co_await temporaries twice
            Status st = co_await net.client->send_frame(frame, Timeout{5000});
            REQUIRE(st.ok());
        }
    };
    run_until_done(net.ctx, {[&] { return sender(0xA); }, [&] { return sender(0xB); }, [&]() -> Task<void> {
        for (int i = 0; i < 2 * kEach; ++i) {
            Result<Frame> r = co_await net.server->receive_frame(Timeout{5000});
            if (!r) {
                receive_ok = false;
                co_return;
            }
            const auto& p = r.value().payload;
            bool uniform = true;
            for (size_t k = 1; k < p.size(); ++k) uniform = uniform && p[k] == p[1];
            if (!uniform) receive_ok = false;
            (p[1] == 0xA ? from_a : from_b).push_back(p[0]);
        }
    }});
    REQUIRE(receive_ok);
    REQUIRE(from_a.size() == size_t(kEach));
    REQUIRE(from_b.size() == size_t(kEach));
    for (int i = 0; i < kEach; ++i) {
        CHECK(from_a[size_t(i)] == i);
        CHECK(from_b[size_t(i)] == i);
    }
}

TEST_CASE("ucx: a wrong pre-shared key is refused with auth_failed on both sides") {
    Loopback net;
    std::optional<Result<Hello>> dialer, acceptor;
    net.run(
        [&]() -> Task<void> {
            auto r = co_await dial_handshake(*net.client, config("right"));
            dialer = std::move(r);
        },
        [&]() -> Task<void> {
            auto r = co_await accept_handshake(*net.server, config("wrong"));
            acceptor = std::move(r);
        });
    REQUIRE_FALSE(dialer->ok());
    REQUIRE_FALSE(acceptor->ok());
    CHECK(dialer->error().code == Errc::auth_failed);
    CHECK(acceptor->error().code == Errc::auth_failed);
}

TEST_CASE("ucx: a silent peer gives timed_out after the receive deadline and the link stays usable") {
    Loopback net;
    std::optional<Result<Frame>> got;
    const auto start = std::chrono::steady_clock::now();
    net.run(
        [&]() -> Task<void> {
            auto r = co_await net.server->receive_frame(Timeout{200});
            got = std::move(r);
        },
        nothing);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    REQUIRE_FALSE(got->ok());
    CHECK(got->error().code == Errc::timed_out);
    CHECK(elapsed >= std::chrono::milliseconds(200));
    CHECK(elapsed < std::chrono::milliseconds(3000));  // loose: see the TCP test of the same deadline
    CHECK(net.server->is_open());

    std::optional<Status> sent;
    net.run(
        [&]() -> Task<void> {
            const Frame beat{MessageType::heartbeat, {}};
            auto st = co_await net.client->send_frame(beat, Timeout{1000});
            sent = std::move(st);
        },
        [&]() -> Task<void> {
            auto r = co_await net.server->receive_frame(Timeout{2000});
            got = std::move(r);
        });
    REQUIRE(sent->ok());
    REQUIRE(got->ok());
    CHECK(got->value().type == MessageType::heartbeat);
}

TEST_CASE("ucx: a peer that closes gives closed; one that closes mid-frame gives truncated") {
    Loopback net;
    std::optional<Result<Frame>> got;
    SUBCASE("clean close") {
        net.client->close();
        net.run(
            [&]() -> Task<void> {
                auto r = co_await net.server->receive_frame(Timeout{5000});
                got = std::move(r);
            },
            nothing);
        REQUIRE_FALSE(got->ok());
        CHECK(got->error().code == Errc::closed);
    }
    SUBCASE("mid-frame") {
        const auto wire = encode_frame(MessageType::token, std::vector<uint8_t>{1, 2, 3, 4});
        const std::span<const uint8_t> part(wire.data(), wire.size() - 2);
        std::optional<Status> sent;
        net.run(
            [&]() -> Task<void> {
                auto st = co_await net.client->send_raw(std::span(&part, 1), Timeout{1000});
                sent = std::move(st);
                net.client->close();
            },
            [&]() -> Task<void> {
                auto r = co_await net.server->receive_frame(Timeout{5000});
                got = std::move(r);
            });
        REQUIRE(sent->ok());
        REQUIRE_FALSE(got->ok());
        CHECK(got->error().code == Errc::truncated);
    }
    CHECK_FALSE(net.server->is_open());
}

TEST_CASE("ucx: garbage on the wire is reported as bad_magic and closes the connection") {
    Loopback net;
    const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::span<const uint8_t> part(reinterpret_cast<const uint8_t*>(junk.data()), junk.size());
    std::optional<Result<Frame>> got, again;
    net.run(
        [&]() -> Task<void> {
            auto st = co_await net.client->send_raw(std::span(&part, 1), Timeout{1000});
            REQUIRE(st.ok());
        },
        [&]() -> Task<void> {
            auto first = co_await net.server->receive_frame(Timeout{5000});
            got = std::move(first);
            auto second = co_await net.server->receive_frame(Timeout{1000});
            again = std::move(second);
        });
    REQUIRE_FALSE(got->ok());
    CHECK(got->error().code == Errc::bad_magic);
    REQUIRE_FALSE(again->ok());
    CHECK_FALSE(net.server->is_open());
}

TEST_CASE("ucx: a frame over the receiver's maximum is refused as oversized_length and closes the connection") {
    UcxOptions small;
    small.max_payload = 1024;
    Loopback net(small);
    std::vector<uint8_t> big(4096, 7);
    std::optional<Status> sent;
    std::optional<Result<Frame>> got;
    net.run(
        [&]() -> Task<void> {
            const Frame frame{MessageType::tensor, big};
            auto st = co_await net.client->send_frame(frame, Timeout{1000});
            sent = std::move(st);
        },
        [&]() -> Task<void> {
            auto r = co_await net.server->receive_frame(Timeout{3000});
            got = std::move(r);
        });
    CHECK(sent->ok());  // the sender's own maximum is the default
    REQUIRE_FALSE(got->ok());
    CHECK(got->error().code == Errc::oversized_length);
    CHECK_FALSE(net.server->is_open());
    // The server's own sends are held to its maximum before anything goes out.
    std::optional<Status> back;
    Loopback other(small);
    other.run(
        [&]() -> Task<void> {
            const Frame frame{MessageType::tensor, big};
            auto st = co_await other.server->send_frame(frame, Timeout{1000});
            back = std::move(st);
        },
        nothing);
    REQUIRE_FALSE(back->ok());
    CHECK(back->error().code == Errc::oversized_length);
}

TEST_CASE("ucx: dialing a port nobody listens on fails with io naming the address, within the deadline") {
    asio::io_context ctx;
    auto ucx = context();
    // A port that was just free: bind a listener, note its port, close it.
    uint16_t port = 0;
    {
        auto bound = UcxListener::bind(ctx.get_executor(), {"127.0.0.1", 0}, ucx);
        REQUIRE(bound.ok());
        port = bound.value()->port();
    }
    std::optional<Result<std::unique_ptr<UcxConnection>>> dialed;
    const auto start = std::chrono::steady_clock::now();
    run_until_done(ctx, {[&]() -> Task<void> {
                       const Endpoint to{"127.0.0.1", port};
                       auto ex = ctx.get_executor();
                       auto r = co_await ucx_dial(ex, to, ucx, Timeout{3000});
                       dialed = std::move(r);
                   }});
    REQUIRE_FALSE(dialed->ok());
    CAPTURE(dialed->error().detail);
    CHECK((dialed->error().code == Errc::io || dialed->error().code == Errc::timed_out));
    CHECK(dialed->error().detail.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(4000));
}

TEST_CASE("ucx: a connection reports UCX's version, its addresses, its lanes and the settings given") {
    UcxOptions options;
    options.mtu = 4096;  // accepted without an RDMA device, and reported as given
    options.rx_queue_len = 24;
    Loopback net;
    auto o = net.client->ucx();
    REQUIRE(o.has_value());
    CHECK_FALSE(o->version.empty());
    CHECK(o->remote == "127.0.0.1:" + std::to_string(net.listener->port()));
    CHECK_FALSE(o->lanes.empty());
    for (const auto& lane : o->lanes) {
        CAPTURE(lane.transport);
        CHECK_FALSE(lane.device.empty());
        if (lane.transport == "tcp") CHECK(lane.mtu > 0);
    }
    auto s = net.server->ucx();
    REQUIRE(s.has_value());
    CHECK(s->remote.rfind("127.0.0.1:", 0) == 0);
    CHECK(std::string(net.client->kind()) == "rdma");

    auto tuned = UcxContext::make(options);
    REQUIRE(tuned.ok());
    bool has_mtu = false;
    for (const auto& [name, value] : tuned.value()->settings()) has_mtu = has_mtu || (name == "IB_PATH_MTU" && value == "4096");
    CHECK(has_mtu);
}

#endif

#if STRATA_TRANSPORT_HAS_UCX
TEST_CASE("ucx: a port whose listener had a connection can be listened on again at once") {
    uint16_t port = 0;
    {
        Loopback net;
        port = net.listener->port();
        std::optional<Result<Frame>> got;
        net.run(
            [&]() -> Task<void> {
                const Frame beat{MessageType::heartbeat, {}};
                auto st = co_await net.client->send_frame(beat, Timeout{1000});
                REQUIRE(st.ok());
            },
            [&]() -> Task<void> {
                auto r = co_await net.server->receive_frame(Timeout{2000});
                got = std::move(r);
            });
        REQUIRE(got->ok());
        net.server->close();  // the accepting side closes first, as a killed worker's does
        net.listener->close();
    }
    asio::io_context ctx;
    auto again = UcxListener::bind(ctx.get_executor(), {"127.0.0.1", port}, context());
    REQUIRE_MESSAGE(again.ok(), (again.ok() ? "" : again.error().detail));
    CHECK(again.value()->port() == port);
}
#endif
