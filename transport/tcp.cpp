#include "transport/tcp.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

#include "transport/deadline.hpp"

namespace strata::transport {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

// "[::1]" -> "::1": the resolver wants the bare address.
std::string bare_host(const std::string& host) {
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return host.substr(1, host.size() - 2);
    return host;
}

Error dial_error(const Endpoint& to, const error_code& ec) {
    if (ec == asio::error::connection_refused)
        return make_error(Errc::io, "dial " + to.to_string() + ": connection refused");
    return make_error(Errc::io, "dial " + to.to_string() + ": " + ec.message());
}

Error dial_timeout(const Endpoint& to, Timeout timeout, const char* doing) {
    return make_error(Errc::timed_out, "dial " + to.to_string() + ": " + doing + " took longer than " +
                                           std::to_string(timeout.count()) + " ms");
}

}  // namespace

Task<Result<std::unique_ptr<TcpConnection>>> tcp_dial(asio::any_io_executor ex, Endpoint to, TcpOptions options,
                                                      Timeout timeout) {
    const auto deadline = deadline_after(timeout);
    Result<tcp::socket> socket = co_await dial_socket(ex, to, options, deadline, timeout);
    if (!socket) co_return socket.error();
    auto conn = std::make_unique<TcpConnection>(std::move(socket.value()), options);
    co_return std::move(conn);
}

Task<Result<tcp::socket>> dial_socket(asio::any_io_executor ex, Endpoint to, TcpOptions options,
                                      Clock::time_point deadline, Timeout timeout) {
    const std::string host = bare_host(to.host);
    if (host.empty()) co_return make_error(Errc::invalid_argument, "dial: empty host");
    const std::string port = std::to_string(to.port);

    tcp::resolver resolver(ex);
    error_code ec;
    tcp::resolver::results_type addresses;
    {
        Deadline dog(ex, deadline, [&resolver] { resolver.cancel(); });
        addresses = co_await resolver.async_resolve(host, port, asio::redirect_error(asio::use_awaitable, ec));
        if (ec && dog.fired()) co_return dial_timeout(to, timeout, "name resolution");
    }
    if (ec) co_return make_error(Errc::io, "dial " + to.to_string() + ": cannot resolve host: " + ec.message());

    // Every address the name has, in the resolver's order, until one connects.
    Error last = make_error(Errc::io, "dial " + to.to_string() + ": the host has no address");
    for (const auto& entry : addresses) {
        tcp::socket socket(ex);
        socket.open(entry.endpoint().protocol(), ec);
        if (ec) {
            last = dial_error(to, ec);
            continue;
        }
        // Buffers before connect, so that the window scale the handshake agrees can use them.
        if (auto st = apply_socket_options(socket, options); !st)
            co_return make_error(Errc::io, "dial " + to.to_string() + ": " + st.error().detail);
        bool fired = false;
        {
            Deadline dog(ex, deadline, [&socket] {
                error_code ignored;
                socket.cancel(ignored);
            });
            const tcp::endpoint address = entry.endpoint();
            co_await socket.async_connect(address, asio::redirect_error(asio::use_awaitable, ec));
            fired = dog.fired();
        }
        if (!ec) co_return std::move(socket);
        if (fired) co_return dial_timeout(to, timeout, "connecting");
        last = dial_error(to, ec);
    }
    co_return last;
}

TcpListener::TcpListener(std::unique_ptr<tcp::acceptor> acceptor, TcpOptions options)
    : acceptor_(std::move(acceptor)), options_(options) {}

Result<TcpListener> TcpListener::bind(asio::any_io_executor ex, const Endpoint& at, TcpOptions options) {
    const std::string host = bare_host(at.host);
    auto fail = [&](const std::string& why) { return make_error(Errc::io, "listen on " + at.to_string() + ": " + why); };
    if (host.empty()) return make_error(Errc::invalid_argument, "listen: empty host");
    error_code ec;
    tcp::resolver resolver(ex);  // a name here is local configuration: resolving it may block briefly
    const auto addresses = resolver.resolve(host, std::to_string(at.port), tcp::resolver::passive, ec);
    if (ec) return fail("cannot resolve host: " + ec.message());
    if (addresses.empty()) return fail("the host has no address");
    const tcp::endpoint address = addresses.begin()->endpoint();

    auto acceptor = std::make_unique<tcp::acceptor>(ex);
    acceptor->open(address.protocol(), ec);
    if (ec) return fail(ec.message());
    acceptor->set_option(tcp::acceptor::reuse_address(true), ec);
    if (ec) return fail("SO_REUSEADDR: " + ec.message());
    if (auto st = apply_socket_options(*acceptor, options); !st) return fail(st.error().detail);  // inherited
    acceptor->bind(address, ec);
    if (ec) return fail(ec.message());
    acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return fail(ec.message());
    return TcpListener(std::move(acceptor), options);
}

Task<Result<std::unique_ptr<TcpConnection>>> TcpListener::accept() {
    Result<tcp::socket> socket = co_await accept_socket();
    if (!socket) co_return socket.error();
    auto conn = std::make_unique<TcpConnection>(std::move(socket.value()), options_);
    co_return std::move(conn);
}

Task<Result<tcp::socket>> TcpListener::accept_socket() {
    if (!acceptor_ || !acceptor_->is_open()) co_return make_error(Errc::closed, "accept: the listener is closed");
    error_code ec;
    tcp::socket socket = co_await acceptor_->async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        if (!acceptor_->is_open()) co_return make_error(Errc::closed, "accept: the listener was closed");
        co_return make_error(Errc::io, "accept: " + ec.message());
    }
    co_return std::move(socket);
}

uint16_t TcpListener::port() const {
    error_code ec;
    const auto local = acceptor_ ? acceptor_->local_endpoint(ec) : tcp::endpoint{};
    return ec ? 0 : local.port();
}

bool TcpListener::is_loopback() const {
    error_code ec;
    if (!acceptor_) return false;
    const auto a = acceptor_->local_endpoint(ec).address();
    if (ec) return false;
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback();
    return a.is_loopback();
}

void TcpListener::close() {
    error_code ignored;
    if (acceptor_ && acceptor_->is_open()) acceptor_->close(ignored);
}

Task<void> heartbeat_loop(Connection& conn, Timeout interval, std::shared_ptr<std::atomic<bool>> stop) {
    if (!stop) stop = std::make_shared<std::atomic<bool>>(false);
    interval = std::max(interval, Timeout{1});
    // A heartbeat may wait behind a large frame: give it the interval, and never under a second.
    const Timeout send_timeout = std::max(interval, Timeout{1000});
    // Sleep in slices so that a stop is seen within 100 ms, whatever the interval.
    const Timeout slice = std::min(interval, Timeout{100});
    const auto ex = co_await asio::this_coro::executor;
    asio::steady_timer timer(ex);
    const Frame beat{MessageType::heartbeat, {}};
    auto next = Clock::now() + interval;
    while (!stop->load()) {
        const auto now = Clock::now();
        if (now < next) {
            timer.expires_after(std::min<Clock::duration>(next - now, slice));
            error_code ec;
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            continue;
        }
        Status sent = co_await conn.send_frame(beat, send_timeout);
        if (!sent) co_return;
        next += interval;
        if (next < Clock::now()) next = Clock::now() + interval;  // fell behind: do not burst
    }
}

}  // namespace strata::transport
