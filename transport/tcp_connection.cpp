#include "transport/tcp_connection.hpp"

namespace strata::transport {
using boost::asio::ip::tcp;
using boost::system::error_code;

TcpConnection::TcpConnection(tcp::socket socket, uint64_t max_payload)
    : StreamConnection(std::move(socket), max_payload) {
    error_code ignored;  // a socket that refuses NODELAY still works, only slower
    this->socket().set_option(tcp::no_delay(true), ignored);
}

TcpConnection::TcpConnection(tcp::socket socket, const TcpOptions& options)
    : TcpConnection(std::move(socket), options.max_payload) {
    (void)apply(options);  // best effort: a kernel that refuses a buffer size still carries frames
}

Status TcpConnection::apply(const TcpOptions& options) {
    return apply_stream_options(socket(), options);
}

}  // namespace strata::transport
