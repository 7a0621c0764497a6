// TcpConnection's sending side: gather writes equal to the copying encoder on the wire,
// concurrent senders whose frames go out whole and in call order, and the byte counters.
#include <doctest/doctest.h>

#if STRATA_TRANSPORT_HAS_TCP

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>

#include <functional>
#include <map>
#include <optional>
#include <random>

#include "test_support.hpp"
#include "transport/send.hpp"
#include "transport/tcp_connection.hpp"
#include "transport_test_util.hpp"

using namespace strata::transport;
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// A connected pair on 127.0.0.1: `client` a TcpConnection, the server side raw or wrapped.
struct Pair {
    asio::io_context ctx;
    std::unique_ptr<TcpConnection> client, server;
    tcp::socket raw_server{ctx};

    explicit Pair(bool raw_server_side = false, TcpOptions options = {}) {
        auto [c, s] = strata::transport::test::loopback_sockets(ctx);
        client = std::make_unique<TcpConnection>(std::move(c), options);
        if (raw_server_side)
            raw_server = std::move(s);
        else
            server = std::make_unique<TcpConnection>(std::move(s), options);
    }

    // Runs every coroutine to completion; an exception in any is rethrown here.
    void run(const std::vector<std::function<Task<void>()>>& tasks) { strata::transport::test::run_all(ctx, tasks); }
};

std::vector<uint8_t> random_bytes(std::mt19937_64& rng, size_t n) {
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = uint8_t(rng());
    return v;
}

// What arrives at the raw server side, `n` bytes of it.
std::vector<uint8_t> read_raw(Pair& p, size_t n) {
    std::vector<uint8_t> got(n);
    asio::read(p.raw_server, asio::buffer(got));
    return got;
}

}  // namespace

TEST_CASE("transport: a gather send puts the same bytes on the wire as the copying encoder") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    Pair p(/*raw_server_side=*/true);

    const auto a = random_bytes(rng, 1 + rng() % 100), b = random_bytes(rng, rng() % 3), c = random_bytes(rng, 70000);
    const std::vector<std::span<const uint8_t>> parts{a, b, c};
    std::vector<uint8_t> joined = a;
    joined.insert(joined.end(), b.begin(), b.end());
    joined.insert(joined.end(), c.begin(), c.end());
    const auto expect = encode_frame(MessageType::tensor, joined);

    Forward f;
    f.position = rng();
    f.output = ForwardOutput::sample;
    f.n_top = 5;
    f.tokens = {1, 2, 3, 4};
    f.hidden = Tensor{DType::bf16, {4, 999}, random_bytes(rng, 4 * 999 * 2)};
    const auto expect_forward = encode_frame(to_frame(f).value());
    const Message boxed = TokenId{77};
    const auto expect_token = encode_frame(to_frame(boxed).value());

    std::optional<Status> s1, s2, s3;
    p.run({[&]() -> Task<void> {
        Status r1 = co_await p.client->send_parts(MessageType::tensor, parts, Timeout{2000});
        s1 = r1;
        Status r2 = co_await send_message(*p.client, f, Timeout{2000});
        s2 = r2;
        Status r3 = co_await send_message(*p.client, boxed, Timeout{2000});
        s3 = r3;
    }});
    REQUIRE(s1->ok());
    REQUIRE(s2->ok());
    REQUIRE(s3->ok());
    CHECK(read_raw(p, expect.size()) == expect);
    CHECK(read_raw(p, expect_forward.size()) == expect_forward);
    CHECK(read_raw(p, expect_token.size()) == expect_token);
    CHECK(p.client->bytes_sent() == expect.size() + expect_forward.size() + expect_token.size());
}

TEST_CASE("transport: send_message refuses a malformed message before anything goes out") {
    Pair p;
    Forward f;  // no tokens
    std::optional<Status> sent;
    p.run({[&]() -> Task<void> {
        Status r = co_await send_message(*p.client, f, Timeout{1000});
        sent = r;
    }});
    REQUIRE_FALSE(sent->ok());
    CHECK(sent->error().code == Errc::malformed_payload);
    CHECK(p.client->bytes_sent() == 0);
    CHECK(p.client->is_open());
}

TEST_CASE("transport: a payload over the maximum is refused on send with oversized_length") {
    TcpOptions small;
    small.max_payload = 1000;
    Pair p(false, small);
    const std::vector<uint8_t> big(1001);
    const std::vector<std::span<const uint8_t>> parts{big};
    std::optional<Status> sent;
    p.run({[&]() -> Task<void> {
        Status r = co_await p.client->send_parts(MessageType::tensor, parts, Timeout{1000});
        sent = r;
    }});
    REQUIRE_FALSE(sent->ok());
    CHECK(sent->error().code == Errc::oversized_length);
}

TEST_CASE("transport: 8 concurrent senders x 50 frames arrive whole and in order per sender") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    MESSAGE("seed ", seed);
    // Default buffers: frames up to 200 KB still go out in partial writes, which the receive
    // deadlines below interrupt. (A send buffer near loopback's 64 KiB MSS would make the
    // transfer wait on delayed ACKs; a receive buffer below it stalls on the persist timer.)
    // Without the send lock this test fails: frames interleave and the receiver loses framing.
    Pair p;
    constexpr int kSenders = 8, kFrames = 50;

    // Frame k of sender s: [s][k as u32][bytes from a generator seeded by (seed, s, k)].
    auto payload = [seed](int s, int k) {
        std::mt19937_64 g(seed ^ (uint64_t(s) << 32) ^ uint64_t(k));
        const size_t n = g() % 3 == 0 ? g() % 200000 : g() % 2000;
        std::vector<uint8_t> v(5 + n);
        v[0] = uint8_t(s);
        for (int i = 0; i < 4; ++i) v[1 + i] = uint8_t(uint32_t(k) >> (8 * i));
        for (size_t i = 5; i < v.size(); ++i) v[i] = uint8_t(g());
        return v;
    };

    std::vector<Status> failures;
    uint64_t expected_wire = 0;
    int senders_done = 0;
    std::vector<std::function<Task<void>()>> tasks;
    for (int s = 0; s < kSenders; ++s) {
        tasks.push_back([&, s]() -> Task<void> {
            for (int k = 0; k < kFrames; ++k) {
                const Frame f{MessageType::tensor, payload(s, k)};
                expected_wire += kHeaderSize + f.payload.size();
                Status st = co_await p.client->send_frame(f, Timeout{30000});
                if (!st) failures.push_back(st);
            }
            ++senders_done;
        });
    }
    // The client also receives under a short deadline the whole time: each expiry cancels the
    // socket's pending operations, and the writes must resume where they stopped.
    int client_timeouts = 0;
    tasks.push_back([&]() -> Task<void> {
        while (senders_done < kSenders) {
            Result<Frame> r = co_await p.client->receive_frame(Timeout{1});
            if (r.ok() || r.error().code != Errc::timed_out) co_return;
            ++client_timeouts;
        }
    });
    std::map<int, int> next_seq;
    int received = 0;
    bool in_order = true, intact = true;
    std::optional<Error> receive_error;
    tasks.push_back([&]() -> Task<void> {
        while (received < kSenders * kFrames) {
            Result<Frame> r = co_await p.server->receive_frame(Timeout{30000});
            if (!r) {
                receive_error = r.error();
                co_return;
            }
            const auto& f = r.value();
            const int s = f.payload[0];
            int k = 0;
            for (int i = 0; i < 4; ++i) k |= int(f.payload[1 + i]) << (8 * i);
            if (k != next_seq[s]++) in_order = false;
            if (f.payload != payload(s, k)) intact = false;
            ++received;
        }
    });
    p.run(tasks);

    for (const auto& f : failures) FAIL_CHECK(std::string(to_string(f.error().code)), ": ", f.error().detail);
    if (receive_error) FAIL(std::string(to_string(receive_error->code)), ": ", receive_error->detail);
    CHECK(received == kSenders * kFrames);
    CHECK(in_order);
    CHECK(intact);
    MESSAGE("client receive deadlines that cancelled the socket mid-send: ", client_timeouts);
    CHECK(p.client->bytes_sent() == expected_wire);
    CHECK(p.server->bytes_received() == expected_wire);
    CHECK(p.client->is_open());
}

TEST_CASE("transport: a send whose deadline passes while earlier frames go out sends nothing and keeps the link") {
    Pair p;
    // 32 MiB that nobody reads for a while: more than the kernel's largest send and receive
    // buffers together, so the first send blocks. (Default buffers: a tiny send buffer would
    // make the transfer wait on delayed ACKs once the reader starts.)
    const Frame big{MessageType::tensor, std::vector<uint8_t>(32u << 20, 0x5A)};
    const Frame small{MessageType::heartbeat, {}};
    std::optional<Status> big_sent, small_sent;
    std::optional<Result<Frame>> first, second;
    p.run({[&]() -> Task<void> {
               Status r = co_await p.client->send_frame(big, Timeout{10000});
               big_sent = r;
           },
           [&]() -> Task<void> {
               Status r = co_await p.client->send_frame(small, Timeout{50});
               small_sent = r;
               // Only now start reading: the big frame completes, the small one never went out.
               Result<Frame> a = co_await p.server->receive_frame(Timeout{10000});
               first = std::move(a);
           }});
    REQUIRE(small_sent.has_value());
    REQUIRE_FALSE(small_sent->ok());
    CHECK(small_sent->error().code == Errc::timed_out);
    if (!big_sent->ok()) FAIL(std::string(to_string(big_sent->error().code)), ": ", big_sent->error().detail);
    REQUIRE(first->ok());
    CHECK(first->value().payload.size() == big.payload.size());
    // The link is still whole: the next frame is the next one sent.
    std::optional<Status> again;
    p.run({[&]() -> Task<void> {
               Status r = co_await p.client->send_frame(small, Timeout{1000});
               again = r;
           },
           [&]() -> Task<void> {
               Result<Frame> b = co_await p.server->receive_frame(Timeout{1000});
               second = std::move(b);
           }});
    REQUIRE(again->ok());
    REQUIRE(second->ok());
    CHECK(second->value().type == MessageType::heartbeat);
}

TEST_CASE("transport: byte counters count headers and payloads in both directions") {
    Pair p;
    const Frame a{MessageType::token, {1, 2, 3, 4}};
    const Frame b{MessageType::heartbeat, {}};
    std::optional<Result<Frame>> got_a, got_b;
    p.run({[&]() -> Task<void> {
               Status r1 = co_await p.client->send_frame(a, Timeout{1000});
               Status r2 = co_await p.server->send_frame(b, Timeout{1000});
               (void)r1;
               (void)r2;
           },
           [&]() -> Task<void> {
               Result<Frame> r = co_await p.server->receive_frame(Timeout{1000});
               got_a = std::move(r);
               Result<Frame> r2 = co_await p.client->receive_frame(Timeout{1000});
               got_b = std::move(r2);
           }});
    REQUIRE(got_a->ok());
    REQUIRE(got_b->ok());
    CHECK(p.client->bytes_sent() == kHeaderSize + 4);
    CHECK(p.server->bytes_received() == kHeaderSize + 4);
    CHECK(p.server->bytes_sent() == kHeaderSize);
    CHECK(p.client->bytes_received() == kHeaderSize);
}

TEST_CASE("transport: Connection's default send_parts joins the parts into one frame") {
    // A connection that records frames, as another transport would implement only send_frame.
    struct Recorder final : Connection {
        std::vector<Frame> frames;
        Task<Status> send_frame(const Frame& f, Timeout) override {
            frames.push_back(f);
            co_return Ok{};
        }
        Task<Result<Frame>> receive_frame(Timeout) override { co_return make_error(Errc::closed, "none"); }
        void close() override {}
    };
    asio::io_context ctx;
    Recorder rec;
    const Tensor t{DType::f32, {2}, {1, 2, 3, 4, 5, 6, 7, 8}};
    std::optional<Status> sent;
    asio::co_spawn(
        ctx,
        [&]() -> Task<void> {
            Status r = co_await send_message(rec, t, Timeout{1000});
            sent = r;
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    ctx.run();
    REQUIRE(sent->ok());
    REQUIRE(rec.frames.size() == 1);
    CHECK(rec.frames[0].type == MessageType::tensor);
    CHECK(rec.frames[0].payload == to_frame(t).value().payload);
}

#endif  // STRATA_TRANSPORT_HAS_TCP
