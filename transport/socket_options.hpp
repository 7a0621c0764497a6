// TCP socket settings: what a connection asks for (TcpOptions) and what the kernel actually
// gave it (SocketObserved), for reports that state the deployment as observed.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <string>

#include "transport/error.hpp"
#include "transport/frame.hpp"

namespace strata::transport {

struct TcpOptions {
    int send_buffer = 0;     // SO_SNDBUF bytes; 0: the OS default
    int receive_buffer = 0;  // SO_RCVBUF bytes; 0: the OS default (autotuned). Keep it well above
                             // the path MSS (64 KiB on loopback) or TCP stalls on its persist timer
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

// Sets SO_SNDBUF / SO_RCVBUF (when non-zero) on an open socket or acceptor (before connect or
// listen, so that TCP window scaling can use them); TCP_NODELAY is apply_stream_options'.
// io naming the option on failure.
template <typename Socket>
Status apply_socket_options(Socket& s, const TcpOptions& options) {
    boost::system::error_code ec;
    if (options.send_buffer > 0) {
        s.set_option(boost::asio::socket_base::send_buffer_size(options.send_buffer), ec);
        if (ec) return make_error(Errc::io, "SO_SNDBUF " + std::to_string(options.send_buffer) + ": " + ec.message());
    }
    if (options.receive_buffer > 0) {
        s.set_option(boost::asio::socket_base::receive_buffer_size(options.receive_buffer), ec);
        if (ec)
            return make_error(Errc::io, "SO_RCVBUF " + std::to_string(options.receive_buffer) + ": " + ec.message());
    }
    return Ok{};
}

// apply_socket_options, then TCP_NODELAY as options.no_delay says, on a connected socket.
Status apply_stream_options(boost::asio::ip::tcp::socket& s, const TcpOptions& options);

// Reads the socket's settings back, and finds the interface that owns its local address.
// Fields it cannot learn stay at their zero values.
SocketObserved observe_socket(const boost::asio::ip::tcp::socket& s);

// The MTU of the network interface named `interface` (SIOCGIFMTU); 0 when unknown.
int interface_mtu(const std::string& interface);

// "1.2.3.4:80", "[::1]:80".
std::string endpoint_text(const boost::asio::ip::tcp::endpoint& e);

}  // namespace strata::transport
