#include "transport/tls.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "transport/stream_error.hpp"

namespace strata::transport {
namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

// The oldest OpenSSL error queued on this thread, as text (and the queue emptied).
std::string openssl_reason() {
    const unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) return "unknown OpenSSL error";
    const char* reason = ERR_reason_error_string(e);
    if (reason) return reason;
    char buffer[256];
    ERR_error_string_n(e, buffer, sizeof buffer);
    return buffer;
}

Error config_error(const std::string& what) {
    return make_error(Errc::invalid_argument, "TLS: " + what + ": " + openssl_reason());
}

// "[::1]" -> "::1".
std::string bare(const std::string& host) {
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return host.substr(1, host.size() - 2);
    return host;
}

}  // namespace

TlsContext::TlsContext(TlsRole role, TlsOptions options)
    : role_(role),
      options_(std::move(options)),
      ctx_(role == TlsRole::dialer ? ssl::context::tls_client : ssl::context::tls_server) {}

Result<std::shared_ptr<TlsContext>> TlsContext::make(TlsRole role, const TlsOptions& options) {
    ERR_clear_error();
    std::shared_ptr<TlsContext> tls(new TlsContext(role, options));
    SSL_CTX* ctx = tls->ctx_.native_handle();
    if (!ctx) return config_error("cannot create a context");
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) return config_error("minimum version TLS 1.2");
    // Nothing after the handshake may make a read write (a cancelled TLS write cannot resume):
    // no renegotiation (TLS 1.2), no session tickets (TLS 1.3 sends them after the handshake).
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    if (role == TlsRole::acceptor) SSL_CTX_set_num_tickets(ctx, 0);

    if (options.cert_file.empty() != options.key_file.empty())
        return make_error(Errc::invalid_argument, "TLS: a certificate needs its private key and a key its certificate");
    if (role == TlsRole::acceptor && options.cert_file.empty())
        return make_error(Errc::invalid_argument, "TLS: the accepting side needs a certificate and its private key");
    if (!options.cert_file.empty()) {
        if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1)
            return config_error("cannot load the certificate " + options.cert_file);
        if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
            return config_error("cannot use the private key " + options.key_file + " with " + options.cert_file);
        if (SSL_CTX_check_private_key(ctx) != 1)
            return config_error("the private key " + options.key_file + " does not match " + options.cert_file);
    }
    if (!options.ca_file.empty()) {
        if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1)
            return config_error("cannot load the CA certificates " + options.ca_file);
    } else if (options.verifies()) {
        if (SSL_CTX_set_default_verify_paths(ctx) != 1) return config_error("the system's CA paths");
    }
    int mode = SSL_VERIFY_NONE;
    if (options.verifies())
        mode = role == TlsRole::acceptor ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER;
    SSL_CTX_set_verify(ctx, mode, nullptr);
    return tls;
}

TlsConnection::TlsConnection(tcp::socket socket, std::shared_ptr<TlsContext> ctx, const TcpOptions& options)
    : StreamConnection(TlsStream(std::move(socket), ctx->native()), options.max_payload), ctx_(std::move(ctx)) {
    (void)apply_stream_options(this->socket(), options);  // best effort, as TcpConnection
}

Task<Status> TlsConnection::handshake(Clock::time_point deadline, Timeout timeout, std::string peer) {
    const auto type = ctx_->role() == TlsRole::dialer ? ssl::stream_base::client : ssl::stream_base::server;
    error_code ec;
    bool fired = false;
    {
        Deadline dog(stream().get_executor(), deadline, [this] {
            error_code ignored;
            socket().cancel(ignored);
        });
        co_await stream().async_handshake(type, asio::redirect_error(asio::use_awaitable, ec));
        fired = dog.fired();
    }
    if (!ec) {
        SSL* s = stream().native_handle();
        observed_tls_ = TlsObserved{SSL_get_version(s), SSL_get_cipher_name(s)};
        co_return Ok{};
    }
    close();
    if (fired && ec == asio::error::operation_aborted)
        co_return make_error(Errc::timed_out, "TLS handshake with " + peer + " took longer than " +
                                                  std::to_string(timeout.count()) + " ms");
    if (peer_closed(ec))
        co_return make_error(Errc::tls_failed, "TLS handshake with " + peer +
                                                   ": the peer closed the connection (does it speak TLS?)");
    std::string detail = "TLS handshake with " + peer + " failed: " + ec.message();
    const long verify = SSL_get_verify_result(stream().native_handle());
    if (ec.category() == asio::error::get_ssl_category() && verify != X509_V_OK)
        detail += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
    co_return make_error(ec.category() == asio::error::get_ssl_category() ? Errc::tls_failed : Errc::io, detail);
}

Task<Result<std::unique_ptr<TlsConnection>>> tls_dial(asio::any_io_executor ex, Endpoint to, TcpOptions options,
                                                      std::shared_ptr<TlsContext> tls, Timeout timeout) {
    const auto deadline = deadline_after(timeout);
    if (!tls || tls->role() != TlsRole::dialer)
        co_return make_error(Errc::invalid_argument, "tls_dial: needs a dialer's TLS context");
    Result<tcp::socket> socket = co_await dial_socket(ex, to, options, deadline, timeout);
    if (!socket) co_return socket.error();
    auto conn = std::make_unique<TlsConnection>(std::move(socket.value()), tls, options);
    SSL* s = conn->stream().native_handle();
    const std::string host = bare(to.host);
    error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) SSL_set_tlsext_host_name(s, host.c_str());  // SNI: names only, never addresses
    if (tls->options().verifies() && tls->options().verify_host) {
        X509_VERIFY_PARAM* param = SSL_get0_param(s);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        const int set = ec ? X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0)
                           : X509_VERIFY_PARAM_set1_ip_asc(param, address.to_string().c_str());
        if (set != 1) co_return make_error(Errc::invalid_argument, "TLS: cannot check the name " + host);
    }
    const std::string peer = to.to_string();
    Status shaken = co_await conn->handshake(deadline, timeout, peer);
    if (!shaken) co_return shaken.error();
    co_return std::move(conn);
}

Task<Result<std::unique_ptr<TlsConnection>>> tls_accept(tcp::socket socket, TcpOptions options,
                                                        std::shared_ptr<TlsContext> tls, Timeout timeout) {
    const auto deadline = deadline_after(timeout);
    if (!tls || tls->role() != TlsRole::acceptor)
        co_return make_error(Errc::invalid_argument, "tls_accept: needs an acceptor's TLS context");
    error_code ec;
    const auto remote = socket.remote_endpoint(ec);
    const std::string peer = ec ? std::string("the peer") : endpoint_text(remote);
    auto conn = std::make_unique<TlsConnection>(std::move(socket), tls, options);
    Status shaken = co_await conn->handshake(deadline, timeout, peer);
    if (!shaken) co_return shaken.error();
    co_return std::move(conn);
}

}  // namespace strata::transport
