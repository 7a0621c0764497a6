// Dialing and listening over TCP, socket settings as configured and as observed, and the
// heartbeat that keeps a live but idle link inside the peer's receive deadline.
//
//   asio::io_context io;
//   auto listener = TcpListener::bind(io.get_executor(), {"127.0.0.1", 7001}, options);
//   ... co_await listener.value().accept();                    // Result<unique_ptr<TcpConnection>>
//   ... co_await tcp_dial(io.get_executor(), {"127.0.0.1", 7001}, options, Timeout{5000});
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
// "HOST:PORT", "[V6]:PORT"; `invalid` detail names what is wrong. Port 0 is allowed (listen on any).
Result<Endpoint> parse_endpoint(std::string_view text);

struct TcpOptions {
    int send_buffer = 0;     // SO_SNDBUF bytes; 0: the OS default
    int receive_buffer = 0;  // SO_RCVBUF bytes; 0: the OS default
    bool no_delay = true;    // TCP_NODELAY: frames are latency-bound
    uint64_t max_payload = kDefaultMaxPayload;
};

// What the socket actually has (the kernel may round or double what was asked).
struct SocketObserved {
    std::string local, remote;  // "addr:port"
    int send_buffer = 0, receive_buffer = 0;
    bool no_delay = false;
    int mtu = 0;                // of the interface the connection uses (0: unknown)
    std::string interface;      // its name ("" unknown)
};

Task<Result<std::unique_ptr<TcpConnection>>> tcp_dial(boost::asio::any_io_executor ex, Endpoint to,
                                                      TcpOptions options, Timeout timeout);

class TcpListener {
public:
    static Result<TcpListener> bind(boost::asio::any_io_executor ex, const Endpoint& at, TcpOptions options);
    Task<Result<std::unique_ptr<TcpConnection>>> accept();
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
