// TLS (1.3, 1.2 at least) around the same framed connection as TCP, through Asio's OpenSSL
// support: TlsConnection is StreamConnection over asio::ssl::stream<tcp::socket>, so framing,
// deadlines, FIFO sends and counters are the very code TcpConnection runs.
//
// The acceptor presents a certificate and, when it has a CA file, requires a client
// certificate that chains to it (mutual TLS). The dialer verifies the acceptor's certificate
// against its CA file (and the host it dialed against the certificate's names) and presents
// its own when it has one. The PSK handshake (handshake.hpp) still runs inside TLS.
//
//   auto ctx = TlsContext::make(TlsRole::dialer, tls_options);           // Result<shared_ptr>
//   ... co_await tls_dial(ex, to, tcp_options, ctx.value(), timeout);     // named arguments only
//   auto socket = co_await listener.accept_socket();                      // worker: accept fast,
//   ... co_await tls_accept(std::move(socket.value()), tcp, ctx, timeout); // handshake per peer
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <memory>
#include <optional>
#include <string>

#include "transport/stream_connection.hpp"
#include "transport/tcp.hpp"

namespace strata::transport {

struct TlsOptions {
    std::string cert_file;  // PEM certificate (chain first) this side presents; the acceptor must have one
    std::string key_file;   // PEM private key of cert_file
    std::string ca_file;    // PEM CA certificate(s) the peer's certificate must chain to
    // Verify the peer's certificate. Unset: exactly when ca_file is set. On the acceptor, a
    // verified peer must present a certificate (mutual TLS); with no ca_file the dialer
    // verifies against the system's default CA paths.
    std::optional<bool> verify_peer;
    // Dialer only: the certificate must also name the host dialed (DNS name or IP address
    // in its subjectAltName), when the peer is verified.
    bool verify_host = true;

    bool enabled() const { return !cert_file.empty() || !key_file.empty() || !ca_file.empty(); }
    bool verifies() const { return verify_peer.value_or(!ca_file.empty()); }
};

enum class TlsRole { dialer, acceptor };

// An OpenSSL context set up once per side (certificates loaded, verification configured) and
// shared by its connections. TLS 1.2 minimum, no compression, renegotiation or session
// tickets (nothing is ever written on the receive path after the handshake).
class TlsContext {
public:
    // invalid_argument naming the file and OpenSSL's reason when a file does not load, the key
    // does not match the certificate, or an acceptor has no certificate.
    static Result<std::shared_ptr<TlsContext>> make(TlsRole role, const TlsOptions& options);
    boost::asio::ssl::context& native() { return ctx_; }
    TlsRole role() const { return role_; }
    const TlsOptions& options() const { return options_; }

private:
    TlsContext(TlsRole role, TlsOptions options);
    TlsRole role_;
    TlsOptions options_;
    boost::asio::ssl::context ctx_;
};

using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

class TlsConnection final : public StreamConnection<TlsStream> {
public:
    // `socket` gets `options` (buffers, TCP_NODELAY) and the TLS session is set up, not started:
    // handshake() next (tls_dial and tls_accept do both).
    TlsConnection(boost::asio::ip::tcp::socket socket, std::shared_ptr<TlsContext> ctx, const TcpOptions& options);

    // The TLS handshake before `deadline`: timed_out, or tls_failed with OpenSSL's reason and the
    // certificate check's ("certificate verify failed: unable to get local issuer certificate").
    // `peer` names the other end in the detail. The connection is closed on failure.
    Task<Status> handshake(Clock::time_point deadline, Timeout timeout, std::string peer);
    std::optional<TlsObserved> tls() const override { return observed_tls_; }
    const char* kind() const override { return "tls"; }

private:
    std::shared_ptr<TlsContext> ctx_;
    std::optional<TlsObserved> observed_tls_;
};

// tcp_dial, then the TLS handshake as the client, all before the one deadline. The context must
// be a dialer's. Errors: tcp_dial's, timed_out, tls_failed.
Task<Result<std::unique_ptr<TlsConnection>>> tls_dial(boost::asio::any_io_executor ex, Endpoint to,
                                                      TcpOptions options, std::shared_ptr<TlsContext> tls,
                                                      Timeout timeout);

// The TLS handshake as the server on an accepted socket (TcpListener::accept_socket), before
// the deadline; the context must be an acceptor's. Errors: timed_out, tls_failed.
Task<Result<std::unique_ptr<TlsConnection>>> tls_accept(boost::asio::ip::tcp::socket socket, TcpOptions options,
                                                        std::shared_ptr<TlsContext> tls, Timeout timeout);

}  // namespace strata::transport
