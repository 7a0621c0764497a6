// Round trips of one frame over each transport this build has, on loopback: the per-hop cost
// of the transport itself, apart from any stage's compute (strata-bench pipeline's hop latency
// includes the stage's forward). The echoing peer runs on its own thread and io_context, as a
// worker would. The ceiling printed beside each figure is a blocking ping-pong of the same bytes
// over a plain loopback TCP socket pair, measured in the same run.
//
//   bench_transport [--sizes 0,4096,14336,458752,4194304] [--reps 200] [-o REPORT.json]
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <future>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "transport/link_kind.hpp"
#include "transport/tcp.hpp"
#if STRATA_TRANSPORT_HAS_UCX
#include "transport/ucx/ucx.hpp"
#endif

namespace asio = boost::asio;
namespace tr = strata::transport;
namespace bench = strata::bench;

namespace {

// Echoes every frame back until the connection closes.
tr::Task<void> echo(tr::Connection& conn) {
    for (;;) {
        tr::Result<tr::Frame> f = co_await conn.receive_frame(tr::Timeout{30000});
        if (!f) co_return;
        tr::Status st = co_await conn.send_frame(f.value(), tr::Timeout{30000});
        if (!st) co_return;
    }
}

// `reps` timed round trips of a `size`-byte tensor frame (after 10 untimed ones).
tr::Task<bench::Stats> ping(tr::Connection& conn, size_t size, int reps) {
    std::vector<uint8_t> payload(size);
    std::mt19937 rng(7);
    for (auto& b : payload) b = uint8_t(rng());
    const tr::Frame frame{tr::MessageType::tensor, payload};
    std::vector<double> ns;
    for (int i = 0; i < reps + 10; ++i) {
        const auto t0 = bench::Clock::now();
        tr::Status st = co_await conn.send_frame(frame, tr::Timeout{30000});
        if (!st) throw std::runtime_error("send: " + st.error().detail);
        tr::Result<tr::Frame> back = co_await conn.receive_frame(tr::Timeout{30000});
        if (!back) throw std::runtime_error("receive: " + back.error().detail);
        if (back.value().payload != payload) throw std::runtime_error("the echo differs from what was sent");
        if (i >= 10) ns.push_back(bench::elapsed_ns(t0, bench::Clock::now()));
    }
    co_return bench::stats_of(std::move(ns));
}

// The ceiling: the same bytes (plus a 24-byte header's worth) bounced over a plain loopback TCP
// socket pair with blocking send and recv, TCP_NODELAY, no framing, checksums or coroutines.
bench::Stats raw_tcp_ping(size_t size, int reps) {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listener, 1);
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    const size_t n = size + 24;
    auto exact = [](int fd, uint8_t* p, size_t k, bool send) {
        while (k) {
            const ssize_t r = send ? ::send(fd, p, k, MSG_NOSIGNAL) : ::recv(fd, p, k, 0);
            if (r <= 0) return false;
            p += r;
            k -= size_t(r);
        }
        return true;
    };
    std::thread server([&] {
        const int fd = ::accept(listener, nullptr, nullptr);
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        std::vector<uint8_t> buf(n);
        while (exact(fd, buf.data(), n, false) && exact(fd, buf.data(), n, true)) {
        }
        ::close(fd);
    });
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    std::vector<uint8_t> buf(n, 0x5a);
    std::vector<double> ns;
    for (int i = 0; i < reps + 10; ++i) {
        const auto t0 = bench::Clock::now();
        exact(fd, buf.data(), n, true);
        exact(fd, buf.data(), n, false);
        if (i >= 10) ns.push_back(bench::elapsed_ns(t0, bench::Clock::now()));
    }
    ::close(fd);
    server.join();
    ::close(listener);
    return bench::stats_of(std::move(ns));
}

struct Row {
    std::string transport, detail;
    size_t size = 0;
    bench::Stats rtt, ceiling;
};

// A connected pair: the echoing side on its own thread; `client` runs the pings.
template <typename Listen, typename Dial>
std::vector<Row> measure(const std::string& name, Listen listen, Dial dial, const std::vector<int64_t>& sizes,
                         int reps, const std::vector<bench::Stats>& ceilings) {
    asio::io_context server_io, client_io;
    std::promise<uint16_t> port_promise;
    std::thread server([&] {
        listen(server_io, port_promise);
        server_io.run();
    });
    const uint16_t port = port_promise.get_future().get();
    std::vector<Row> rows;
    std::string detail;
    std::exception_ptr failure;
    asio::co_spawn(
        client_io,
        [&]() -> tr::Task<void> {
            auto conn = co_await dial(client_io, port);
            detail = conn.second;
            for (size_t i = 0; i < sizes.size(); ++i) {
                bench::Stats st = co_await ping(*conn.first, size_t(sizes[i]), reps);
                rows.push_back({name, detail, size_t(sizes[i]), st, ceilings[i]});
            }
            conn.first->close();
        },
        [&](std::exception_ptr e) {
            failure = e;
            client_io.stop();
        });
    client_io.run();
    server_io.stop();
    server.join();
    if (failure) std::rethrow_exception(failure);
    return rows;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int64_t> sizes{0, 4096, 14336, 458752, 4194304};
    int reps = 200;
    std::string out;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--sizes") sizes = bench::int_list(bench::option_value(argc, argv, i));
        else if (a == "--reps") reps = std::max(1, std::atoi(bench::option_value(argc, argv, i)));
        else if (a == "-o") out = bench::option_value(argc, argv, i);
        else {
            std::fprintf(stderr, "usage: bench_transport [--sizes 0,4096,14336,458752,4194304] [--reps 200] [-o REPORT.json]\n");
            return 2;
        }
    }
    std::printf("cpu: %s; load average %s\n", bench::cpu_model().c_str(), bench::loadavg().c_str());
    std::vector<bench::Stats> ceilings;
    for (int64_t s : sizes) ceilings.push_back(raw_tcp_ping(size_t(s), reps));

    std::vector<Row> rows;
    // tcp: TcpListener and tcp_dial, the pipeline's own connections.
    std::vector<std::unique_ptr<tr::TcpConnection>> tcp_server_conns;
    std::optional<tr::TcpListener> tcp_listener;
    rows = measure(
        "tcp",
        [&](asio::io_context& io, std::promise<uint16_t>& port) {
            auto bound = tr::TcpListener::bind(io.get_executor(), {"127.0.0.1", 0}, tr::TcpOptions{});
            if (!bound) throw std::runtime_error(bound.error().detail);
            tcp_listener.emplace(std::move(bound.value()));
            port.set_value(tcp_listener->port());
            asio::co_spawn(io, [&]() -> tr::Task<void> {
                auto c = co_await tcp_listener->accept();
                if (!c) co_return;
                tcp_server_conns.push_back(std::move(c.value()));
                co_await echo(*tcp_server_conns.back());
            }, asio::detached);
        },
        [&](asio::io_context& io, uint16_t port) -> tr::Task<std::pair<std::unique_ptr<tr::Connection>, std::string>> {
            const tr::Endpoint to{"127.0.0.1", port};
            auto ex = io.get_executor();
            const tr::TcpOptions options{};
            auto c = co_await tr::tcp_dial(ex, to, options, tr::Timeout{5000});
            if (!c) throw std::runtime_error(c.error().detail);
            const std::string detail = "TCP_NODELAY, socket buffers: OS default";
            co_return std::pair<std::unique_ptr<tr::Connection>, std::string>{std::move(c.value()), detail};
        },
        sizes, reps, ceilings);
    tcp_server_conns.clear();
    tcp_listener.reset();

#if STRATA_TRANSPORT_HAS_UCX
    {
        std::vector<std::unique_ptr<tr::UcxConnection>> ucx_server_conns;
        std::unique_ptr<tr::UcxListener> ucx_listener;
        auto more = measure(
            "rdma",
            [&](asio::io_context& io, std::promise<uint16_t>& port) {
                auto ctx = tr::UcxContext::make({});
                if (!ctx) throw std::runtime_error(ctx.error().detail);
                auto bound = tr::UcxListener::bind(io.get_executor(), {"127.0.0.1", 0}, ctx.value());
                if (!bound) throw std::runtime_error(bound.error().detail);
                ucx_listener = std::move(bound.value());
                port.set_value(ucx_listener->port());
                asio::co_spawn(io, [&]() -> tr::Task<void> {
                    auto c = co_await ucx_listener->accept();
                    if (!c) co_return;
                    ucx_server_conns.push_back(std::move(c.value()));
                    co_await echo(*ucx_server_conns.back());
                }, asio::detached);
            },
            [&](asio::io_context& io, uint16_t port) -> tr::Task<std::pair<std::unique_ptr<tr::Connection>, std::string>> {
                auto ctx = tr::UcxContext::make({});
                if (!ctx) throw std::runtime_error(ctx.error().detail);
                const tr::Endpoint to{"127.0.0.1", port};
                auto ex = io.get_executor();
                std::shared_ptr<tr::UcxContext> context = ctx.value();
                auto c = co_await tr::ucx_dial(ex, to, context, tr::Timeout{5000});
                if (!c) throw std::runtime_error(c.error().detail);
                std::string lanes;
                if (auto o = c.value()->ucx())
                    for (const auto& l : o->lanes) lanes += (lanes.empty() ? "" : ",") + l.transport + "/" + l.device;
                const std::string detail = "UCX " + tr::UcxContext::version() + ", lanes " + lanes;
                co_return std::pair<std::unique_ptr<tr::Connection>, std::string>{std::move(c.value()), detail};
            },
            sizes, reps, ceilings);
        rows.insert(rows.end(), more.begin(), more.end());
    }
#else
    std::printf("rdma: %s\n", tr::link_kind_unavailable(tr::LinkKind::rdma).c_str());
#endif

    std::printf("\n| transport | frame payload bytes | round trip median µs | min µs | raw TCP ping-pong median µs (ceiling) | ratio |\n");
    std::printf("|---|---|---|---|---|---|\n");
    std::ostringstream json;
    json << "{\n  \"tool\": \"bench_transport\",\n  \"cpu\": \"" << bench::json_escape(bench::cpu_model())
         << "\",\n  \"commit\": \"" << STRATA_BENCH_COMMIT << "\",\n  \"build_type\": \"" << STRATA_BENCH_BUILD_TYPE
         << "\",\n  \"reps\": " << reps << ",\n  \"load_average_after\": \"" << bench::loadavg() << "\",\n"
         << "  \"method\": \"one frame sent, echoed by a peer on its own thread and io_context, received; "
            "round trip per repetition after 10 untimed ones; the ceiling bounces the same bytes plus 24 over "
            "a blocking loopback TCP socket pair (TCP_NODELAY)\",\n  \"rows\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        const double med = r.rtt.median_ns / 1e3, ceil = r.ceiling.median_ns / 1e3;
        std::printf("| %s | %zu | %.1f | %.1f | %.1f | %.2f |\n", r.transport.c_str(), r.size, med, r.rtt.min_ns / 1e3,
                    ceil, ceil > 0 ? med / ceil : 0.0);
        json << "    {\"transport\": \"" << r.transport << "\", \"detail\": \"" << bench::json_escape(r.detail)
             << "\", \"payload_bytes\": " << r.size << ", \"round_trip_median_us\": " << med
             << ", \"round_trip_min_us\": " << r.rtt.min_ns / 1e3 << ", \"raw_tcp_median_us\": " << ceil
             << ", \"round_trip_samples_ns\": [";
        for (size_t k = 0; k < r.rtt.samples_ns.size(); ++k) json << (k ? ", " : "") << r.rtt.samples_ns[k];
        json << "]}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    json << "  ]\n}\n";
    for (const Row& r : rows)
        if (r.size == size_t(sizes.front())) std::printf("%s: %s\n", r.transport.c_str(), r.detail.c_str());
    std::printf("load average after: %s\n", bench::loadavg().c_str());
    if (!out.empty() && !bench::write_report(out, json.str())) return 1;
    return 0;
}
