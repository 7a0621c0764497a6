// Dialing and listening over TCP, socket settings as configured and as observed, and the
// heartbeat that keeps a live but idle link inside the peer's receive deadline.
//
//   asio::io_context io;
//   auto listener = TcpListener::bind(io.get_executor(), {"127.0.0.1", 7001}, options);
//   ... co_await listener.value().accept();                    // Result<unique_ptr<TcpConnection>>
//   const asio::any_io_executor ex = io.get_executor();
//   const Endpoint to{"127.0.0.1", 7001};
//   ... co_await tcp_dial(ex, to, options, Timeout{5000});     // named arguments only (GCC 12)
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/tcp_connection.hpp"

namespace strata::transport {

struct Endpoint {
    std::string host;  // name or address; "[::1]" brackets are accepted
    uint16_t port = 0;
    std::string to_string() const;  // "host:port" ("[v6]:port")
};
// "HOST:PORT", "[V6]:PORT"; Errc::invalid_argument whose detail names what is wrong. Port 0 is
// allowed (listen on any). The host is kept without brackets.
Result<Endpoint> parse_endpoint(std::string_view text);

// TcpOptions (asked) and SocketObserved (as the kernel has it) live in socket_options.hpp.

// Resolves `to`, connects to its addresses in turn before the deadline, and applies `options`
// (buffers before connecting). timed_out, or io naming the endpoint ("connection refused", ...).
// Pass named objects only: GCC 12 destroys temporaries in a co_await expression twice.
Task<Result<std::unique_ptr<TcpConnection>>> tcp_dial(boost::asio::any_io_executor ex, Endpoint to,
                                                      TcpOptions options, Timeout timeout);
// tcp_dial's connected socket before `deadline` (`timeout` is for messages), nothing applied
// after connecting: for dialers that wrap the socket (tls_dial).
Task<Result<boost::asio::ip::tcp::socket>> dial_socket(boost::asio::any_io_executor ex, Endpoint to,
                                                       TcpOptions options, Clock::time_point deadline,
                                                       Timeout timeout);

// Listens with SO_REUSEADDR; bind errors are io naming the endpoint. Accepted connections get
// `options`. close() ends a waiting accept() with closed.
class TcpListener {
public:
    static Result<TcpListener> bind(boost::asio::any_io_executor ex, const Endpoint& at, TcpOptions options);
    Task<Result<std::unique_ptr<TcpConnection>>> accept();
    // The accepted socket itself, for a caller that wraps it (tls_accept): accept fast, then
    // run each TLS handshake in its own coroutine so a slow peer holds up no other.
    Task<Result<boost::asio::ip::tcp::socket>> accept_socket();
    const TcpOptions& options() const { return options_; }
    uint16_t port() const;      // the bound port (useful after binding port 0)
    bool is_loopback() const;   // bound to 127.0.0.0/8 or ::1
    void close();

private:
    TcpListener(std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor, TcpOptions options);
    std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
    TcpOptions options_;
};

// Sends a heartbeat every `interval` until `stop` is set or a send fails (then returns).
// Run it with co_spawn beside the connection's other work.
Task<void> heartbeat_loop(Connection& conn, Timeout interval, std::shared_ptr<std::atomic<bool>> stop);

}  // namespace strata::transport
