// TlsConnection over loopback: certificates made here with OpenSSL's C API (a throwaway CA,
// a server and a client certificate, and a second CA nobody trusts) in a fresh temporary
// directory, so no private key is ever committed. Frames round-trip with random payloads,
// concurrent senders keep their frames whole and in order, the PSK handshake runs inside TLS,
// and every refusal is tls_failed (wrong CA, missing client certificate) or timed_out (a peer
// that never completes the TLS handshake).
#include <doctest/doctest.h>

#if STRATA_TRANSPORT_HAS_TCP

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>

#include "transport/handshake.hpp"
#include "transport/tls.hpp"
#include "transport_test_util.hpp"

using namespace strata::transport;
using strata::transport::test::run_all;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// --- certificates --------------------------------------------------------------------------

struct KeyAndCert {
    EVP_PKEY* key = nullptr;
    X509* cert = nullptr;
    ~KeyAndCert() {
        X509_free(cert);
        EVP_PKEY_free(key);
    }
};

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
    REQUIRE(ext != nullptr);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
}

// A P-256 key and its certificate, signed by `issuer` (self-signed when null).
void make_cert(KeyAndCert& out, const char* cn, const KeyAndCert* issuer, bool is_ca, const char* san, long serial) {
    out.key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    REQUIRE(out.key != nullptr);
    out.cert = X509_new();
    X509_set_version(out.cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(out.cert), serial);
    X509_gmtime_adj(X509_getm_notBefore(out.cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(out.cert), 3600L * 24);
    X509_set_pubkey(out.cert, out.key);
    X509_NAME* name = X509_get_subject_name(out.cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
    X509* issuer_cert = issuer ? issuer->cert : out.cert;
    X509_set_issuer_name(out.cert, X509_get_subject_name(issuer_cert));
    add_ext(out.cert, issuer_cert, NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    add_ext(out.cert, issuer_cert, NID_key_usage,
            is_ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
    if (san) add_ext(out.cert, issuer_cert, NID_subject_alt_name, san);
    REQUIRE(X509_sign(out.cert, issuer ? issuer->key : out.key, EVP_sha256()) > 0);
}

void write_pem(const fs::path& path, X509* cert) {
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    REQUIRE(PEM_write_X509(f, cert) == 1);
    std::fclose(f);
}

void write_pem(const fs::path& path, EVP_PKEY* key) {
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    REQUIRE(PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1);
    std::fclose(f);
}

// ca.pem, server.{pem,key}, client.{pem,key}, other-ca.pem in a fresh directory, removed after.
struct Certificates {
    fs::path dir;
    Certificates() {
        std::string pattern = (fs::temp_directory_path() / "strata-tls-XXXXXX").string();
        REQUIRE(mkdtemp(pattern.data()) != nullptr);
        dir = pattern;
        KeyAndCert ca, server, client, other;
        make_cert(ca, "strata test CA", nullptr, true, nullptr, 1);
        make_cert(server, "strata worker", &ca, false, "DNS:localhost,IP:127.0.0.1,IP:::1", 2);
        make_cert(client, "strata head", &ca, false, nullptr, 3);
        make_cert(other, "somebody else's CA", nullptr, true, nullptr, 4);
        write_pem(dir / "ca.pem", ca.cert);
        write_pem(dir / "server.pem", server.cert);
        write_pem(dir / "server.key", server.key);
        write_pem(dir / "client.pem", client.cert);
        write_pem(dir / "client.key", client.key);
        write_pem(dir / "other-ca.pem", other.cert);
    }
    ~Certificates() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }
    std::string operator()(const char* name) const { return (dir / name).string(); }

    TlsOptions server_options(bool require_client) const {
        TlsOptions o;
        o.cert_file = (*this)("server.pem");
        o.key_file = (*this)("server.key");
        if (require_client) o.ca_file = (*this)("ca.pem");
        return o;
    }
    TlsOptions client_options(bool with_cert, const char* ca = "ca.pem") const {
        TlsOptions o;
        o.ca_file = (*this)(ca);
        if (with_cert) {
            o.cert_file = (*this)("client.pem");
            o.key_file = (*this)("client.key");
        }
        return o;
    }
};

const Certificates& certificates() {
    static const Certificates certs;
    return certs;
}

// --- connections ---------------------------------------------------------------------------

using TlsResult = Result<std::unique_ptr<TlsConnection>>;

// A TLS dial of a TLS acceptor on 127.0.0.1, both outcomes kept.
struct TlsPair {
    asio::io_context ctx;
    std::optional<TcpListener> listener;
    std::optional<TlsResult> dialed, accepted;

    TlsPair(const TlsOptions& server, const TlsOptions& client, Timeout timeout = Timeout{5000}) {
        auto l = TcpListener::bind(ctx.get_executor(), Endpoint{"127.0.0.1", 0}, {});
        REQUIRE(l.ok());
        listener.emplace(std::move(l.value()));
        auto server_ctx = TlsContext::make(TlsRole::acceptor, server);
        REQUIRE(server_ctx.ok());
        auto client_ctx = TlsContext::make(TlsRole::dialer, client);
        REQUIRE(client_ctx.ok());
        const Endpoint to{"127.0.0.1", listener->port()};
        std::shared_ptr<TlsContext> sc = server_ctx.value(), cc = client_ctx.value();
        run_all(ctx, {[&, to, cc, timeout]() -> Task<void> {
                          const asio::any_io_executor ex = ctx.get_executor();
                          const TcpOptions options{};
                          TlsResult r = co_await tls_dial(ex, to, options, cc, timeout);
                          dialed.emplace(std::move(r));
                      },
                      [&, sc, timeout]() -> Task<void> {
                          Result<tcp::socket> s = co_await listener->accept_socket();
                          if (!s) {
                              accepted.emplace(s.error());
                              co_return;
                          }
                          const TcpOptions options{};
                          TlsResult r = co_await tls_accept(std::move(s.value()), options, sc, timeout);
                          accepted.emplace(std::move(r));
                      }});
    }
    TlsConnection& client() { return *dialed->value(); }
    TlsConnection& server() { return *accepted->value(); }
};

std::vector<uint8_t> random_bytes(std::mt19937_64& rng, size_t n) {
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = uint8_t(rng());
    return v;
}

}  // namespace

TEST_CASE("transport tls: mutual TLS 1.3 on loopback carries random frames both ways, counted inside TLS") {
    const auto& certs = certificates();
    TlsPair net(certs.server_options(true), certs.client_options(true));
    REQUIRE(net.dialed->ok());
    REQUIRE(net.accepted->ok());
    for (TlsConnection* c : {&net.client(), &net.server()}) {
        REQUIRE(c->tls().has_value());
        CHECK(c->tls()->version == "TLSv1.3");
        CHECK(!c->tls()->cipher.empty());
        CHECK(c->observed().remote.rfind("127.0.0.1:", 0) == 0);
        CHECK(c->is_open());
    }

    std::mt19937_64 rng(1234);
    std::vector<std::vector<uint8_t>> payloads;
    for (size_t n : {size_t(0), size_t(1), size_t(23), size_t(8191), size_t(8192), size_t(16385), size_t(100000),
                     size_t(3) << 20})
        payloads.push_back(random_bytes(rng, n));
    for (int i = 0; i < 20; ++i) payloads.push_back(random_bytes(rng, rng() % 70000));
    uint64_t wire = 0;
    for (const auto& p : payloads) wire += kHeaderSize + p.size();

    // Client -> server as whole frames, server -> client as three-part gathers of the same bytes.
    std::vector<Frame> at_server, at_client;
    run_all(net.ctx, {[&]() -> Task<void> {
                          for (const auto& p : payloads) {
                              const Frame f{MessageType::tensor, p};
                              Status st = co_await net.client().send_frame(f, Timeout{5000});
                              REQUIRE(st.ok());
                          }
                      },
                      [&]() -> Task<void> {
                          for (size_t i = 0; i < payloads.size(); ++i) {
                              Result<Frame> f = co_await net.server().receive_frame(Timeout{5000});
                              REQUIRE(f.ok());
                              at_server.push_back(std::move(f.value()));
                          }
                          for (const auto& p : payloads) {
                              const std::span<const uint8_t> all = p;
                              const size_t a = all.size() / 3, b = all.size() / 2;
                              const std::span<const uint8_t> parts[] = {all.first(a), all.subspan(a, b - a),
                                                                         all.subspan(b)};
                              const std::span<const std::span<const uint8_t>> list(parts);
                              Status st = co_await net.server().send_parts(MessageType::tensor, list, Timeout{5000});
                              REQUIRE(st.ok());
                          }
                      },
                      [&]() -> Task<void> {
                          // Receives while the server still reads: a full-duplex TLS stream.
                          for (size_t i = 0; i < payloads.size(); ++i) {
                              Result<Frame> f = co_await net.client().receive_frame(Timeout{10000});
                              REQUIRE(f.ok());
                              at_client.push_back(std::move(f.value()));
                          }
                      }});
    REQUIRE(at_server.size() == payloads.size());
    REQUIRE(at_client.size() == payloads.size());
    for (size_t i = 0; i < payloads.size(); ++i) {
        CHECK(at_server[i].payload == payloads[i]);
        CHECK(at_client[i].payload == payloads[i]);
    }
    CHECK(net.client().bytes_sent() == wire);
    CHECK(net.server().bytes_received() == wire);
    CHECK(net.server().bytes_sent() == wire);
    CHECK(net.client().bytes_received() == wire);
}

TEST_CASE("transport tls: concurrent senders' frames arrive whole and in call order per sender") {
    const auto& certs = certificates();
    TlsPair net(certs.server_options(false), certs.client_options(false));
    REQUIRE(net.dialed->ok());
    REQUIRE(net.accepted->ok());
    constexpr int kSenders = 8, kFrames = 30;
    std::vector<std::function<Task<void>()>> tasks;
    for (int s = 0; s < kSenders; ++s)
        tasks.push_back([&net, s]() -> Task<void> {
            std::mt19937_64 rng(uint64_t(s) + 1);
            for (int i = 0; i < kFrames; ++i) {
                std::vector<uint8_t> p = random_bytes(rng, 8 + rng() % 40000);
                p[0] = uint8_t(s);
                p[1] = uint8_t(i);
                const Frame f{MessageType::tensor, std::move(p)};
                Status st = co_await net.client().send_frame(f, Timeout{5000});
                REQUIRE(st.ok());
            }
        });
    std::vector<std::vector<std::vector<uint8_t>>> got(kSenders);
    tasks.push_back([&]() -> Task<void> {
        for (int i = 0; i < kSenders * kFrames; ++i) {
            Result<Frame> f = co_await net.server().receive_frame(Timeout{5000});
            REQUIRE(f.ok());
            const auto& p = f.value().payload;
            REQUIRE(p.size() >= 8);
            got[p[0]].push_back(p);
        }
    });
    run_all(net.ctx, tasks);
    for (int s = 0; s < kSenders; ++s) {
        REQUIRE(got[s].size() == size_t(kFrames));
        std::mt19937_64 rng(uint64_t(s) + 1);
        for (int i = 0; i < kFrames; ++i) {
            std::vector<uint8_t> expect = random_bytes(rng, 8 + rng() % 40000);
            expect[0] = uint8_t(s);
            expect[1] = uint8_t(i);
            CHECK(got[s][i] == expect);
        }
    }
}

TEST_CASE("transport tls: a receive deadline leaves the TLS stream usable; the PSK handshake runs inside") {
    const auto& certs = certificates();
    TlsPair net(certs.server_options(true), certs.client_options(true));
    REQUIRE(net.dialed->ok());
    REQUIRE(net.accepted->ok());
    std::optional<Result<Frame>> early;
    std::optional<Result<Hello>> dialer, acceptor;
    HandshakeConfig config;
    config.local.model_id.fill(7);
    config.local.layer_begin = 1;
    config.local.layer_end = 2;
    config.local.context_length = 64;
    config.key = {1, 2, 3};
    config.timeout = Timeout{2000};
    run_all(net.ctx, {[&]() -> Task<void> {
                          const auto start = Clock::now();
                          Result<Frame> f = co_await net.server().receive_frame(Timeout{150});
                          CHECK(Clock::now() - start >= std::chrono::milliseconds(140));
                          early.emplace(std::move(f));
                          Result<Hello> r = co_await accept_handshake(net.server(), config);
                          acceptor.emplace(std::move(r));
                      },
                      [&]() -> Task<void> {
                          asio::steady_timer pause(net.ctx, std::chrono::milliseconds(400));
                          co_await pause.async_wait(asio::use_awaitable);
                          Result<Hello> r = co_await dial_handshake(net.client(), config);
                          dialer.emplace(std::move(r));
                      }});
    REQUIRE(early.has_value());
    CHECK(!early->ok());
    CHECK(early->error().code == Errc::timed_out);
    REQUIRE(acceptor.has_value());
    REQUIRE(dialer.has_value());
    CHECK(acceptor->ok());
    CHECK(dialer->ok());
    CHECK(net.server().is_open());
}

TEST_CASE("transport tls: a certificate from an unknown CA is refused on the dialer with tls_failed") {
    const auto& certs = certificates();
    TlsPair net(certs.server_options(false), certs.client_options(false, "other-ca.pem"));
    REQUIRE(!net.dialed->ok());
    CHECK(net.dialed->error().code == Errc::tls_failed);
    CHECK(net.dialed->error().detail.find("certificate verify failed") != std::string::npos);
    CHECK(net.dialed->error().detail.find("127.0.0.1") != std::string::npos);
    MESSAGE(net.dialed->error().detail);
    MESSAGE(net.accepted->error().detail);
    REQUIRE(!net.accepted->ok());  // the server sees the client's alert
    CHECK(net.accepted->error().code == Errc::tls_failed);
}

TEST_CASE("transport tls: the acceptor's certificate must name the address dialed") {
    const auto& certs = certificates();
    TlsOptions nameless;  // the client's certificate: signed by the CA, but no subjectAltName
    nameless.cert_file = certs("client.pem");
    nameless.key_file = certs("client.key");
    TlsPair net(nameless, certs.client_options(false));
    REQUIRE(!net.dialed->ok());
    CHECK(net.dialed->error().code == Errc::tls_failed);
    CHECK(net.dialed->error().detail.find("mismatch") != std::string::npos);
    MESSAGE(net.dialed->error().detail);
}

TEST_CASE("transport tls: a client without a certificate is refused when the acceptor requires one") {
    const auto& certs = certificates();
    TlsPair net(certs.server_options(true), certs.client_options(false));
    REQUIRE(!net.accepted->ok());
    CHECK(net.accepted->error().code == Errc::tls_failed);
    CHECK(net.accepted->error().detail.find("certificate") != std::string::npos);
    MESSAGE(net.accepted->error().detail);
    // TLS 1.3: the client's handshake may finish before the server's verdict, which then
    // arrives as an alert on the first read.
    if (net.dialed->ok()) {
        std::optional<Result<Frame>> got;
        run_all(net.ctx, {[&]() -> Task<void> {
            Result<Frame> f = co_await net.client().receive_frame(Timeout{5000});
            got.emplace(std::move(f));
        }});
        REQUIRE(!got->ok());
        CHECK(got->error().code == Errc::tls_failed);
        CHECK(got->error().detail.find("certificate required") != std::string::npos);
        MESSAGE(got->error().detail);
    } else {
        CHECK(net.dialed->error().code == Errc::tls_failed);
    }
}

TEST_CASE("transport tls: a peer that never completes the TLS handshake runs into the deadline") {
    const auto& certs = certificates();
    auto sc = TlsContext::make(TlsRole::acceptor, certs.server_options(false));
    auto cc = TlsContext::make(TlsRole::dialer, certs.client_options(false));
    REQUIRE(sc.ok());
    REQUIRE(cc.ok());
    asio::io_context ctx;
    tcp::acceptor raw(ctx, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    auto l = TcpListener::bind(ctx.get_executor(), Endpoint{"127.0.0.1", 0}, {});
    REQUIRE(l.ok());
    auto& listener = l.value();
    tcp::socket silent_client(ctx), silent_server(ctx);
    std::optional<TlsResult> accepted, dialed;
    std::shared_ptr<TlsContext> server_ctx = sc.value(), client_ctx = cc.value();
    const auto start = Clock::now();
    std::chrono::steady_clock::duration accept_took{}, dial_took{};
    run_all(ctx, {// A TLS acceptor whose client connects and says nothing.
                  [&]() -> Task<void> {
                      Result<tcp::socket> s = co_await listener.accept_socket();
                      REQUIRE(s.ok());
                      const TcpOptions options{};
                      const Timeout timeout{300};
                      TlsResult r = co_await tls_accept(std::move(s.value()), options, server_ctx, timeout);
                      accept_took = Clock::now() - start;
                      accepted.emplace(std::move(r));
                  },
                  [&]() -> Task<void> {
                      const tcp::endpoint to(asio::ip::address_v4::loopback(), listener.port());
                      co_await silent_client.async_connect(to, asio::use_awaitable);
                  },
                  // A TLS dialer whose server accepts and never answers.
                  [&]() -> Task<void> {
                      const asio::any_io_executor ex = ctx.get_executor();
                      const Endpoint to{"127.0.0.1", raw.local_endpoint().port()};
                      const TcpOptions options{};
                      const Timeout timeout{300};
                      TlsResult r = co_await tls_dial(ex, to, options, client_ctx, timeout);
                      dial_took = Clock::now() - start;
                      dialed.emplace(std::move(r));
                  },
                  [&]() -> Task<void> { silent_server = co_await raw.async_accept(asio::use_awaitable); }});
    REQUIRE(!accepted->ok());
    CHECK(accepted->error().code == Errc::timed_out);
    REQUIRE(!dialed->ok());
    CHECK(dialed->error().code == Errc::timed_out);
    CHECK(accept_took < std::chrono::seconds(3));
    CHECK(dial_took < std::chrono::seconds(3));
}

TEST_CASE("transport tls: plain and TLS ends do not talk; bad configuration is named") {
    const auto& certs = certificates();
    // A TLS dialer to a plain acceptor: the frame decoder refuses the ClientHello, and the
    // dialer's handshake fails.
    {
        asio::io_context ctx;
        auto l = TcpListener::bind(ctx.get_executor(), Endpoint{"127.0.0.1", 0}, {});
        REQUIRE(l.ok());
        auto& listener = l.value();
        auto cc = TlsContext::make(TlsRole::dialer, certs.client_options(false));
        REQUIRE(cc.ok());
        std::shared_ptr<TlsContext> client_ctx = cc.value();
        std::optional<TlsResult> dialed;
        std::optional<Result<Frame>> plain;
        run_all(ctx, {[&]() -> Task<void> {
                          const asio::any_io_executor ex = ctx.get_executor();
                          const Endpoint to{"127.0.0.1", listener.port()};
                          const TcpOptions options{};
                          TlsResult r = co_await tls_dial(ex, to, options, client_ctx, Timeout{2000});
                          dialed.emplace(std::move(r));
                      },
                      [&]() -> Task<void> {
                          Result<std::unique_ptr<TcpConnection>> c = co_await listener.accept();
                          REQUIRE(c.ok());
                          Result<Frame> f = co_await c.value()->receive_frame(Timeout{2000});
                          plain.emplace(std::move(f));
                      }});
        REQUIRE(!plain->ok());
        CHECK(plain->error().code == Errc::bad_magic);
        REQUIRE(!dialed->ok());
        CHECK((dialed->error().code == Errc::tls_failed || dialed->error().code == Errc::closed));
        MESSAGE(dialed->error().detail);
    }
    TlsOptions no_cert;
    auto acceptor = TlsContext::make(TlsRole::acceptor, no_cert);
    REQUIRE(!acceptor.ok());
    CHECK(acceptor.error().code == Errc::invalid_argument);
    TlsOptions missing = certs.server_options(false);
    missing.cert_file = certs("does-not-exist.pem");
    auto bad = TlsContext::make(TlsRole::acceptor, missing);
    REQUIRE(!bad.ok());
    CHECK(bad.error().detail.find("does-not-exist.pem") != std::string::npos);
    TlsOptions mismatched = certs.server_options(false);
    mismatched.key_file = certs("client.key");
    auto wrong_key = TlsContext::make(TlsRole::acceptor, mismatched);
    REQUIRE(!wrong_key.ok());
    CHECK(wrong_key.error().detail.find("mismatch") != std::string::npos);
    MESSAGE(wrong_key.error().detail);
}

#endif
