#include "transport/handshake.hpp"

#include "transport/auth.hpp"

namespace strata::transport {
namespace {

constexpr Timeout kReportTimeout{1000};

Task<Status> send(Connection& conn, const Message& m, Timeout timeout) {
    auto f = to_frame(m);
    if (!f) co_return f.error();
    Status st = co_await conn.send_frame(f.value(), timeout);
    co_return st;
}

// The next message, with an error frame from the peer turned into that Error.
Task<Result<Message>> receive(Connection& conn, Timeout timeout) {
    Result<Frame> f = co_await conn.receive_frame(timeout);
    if (!f) co_return f.error();
    auto m = from_frame(f.value());
    if (!m) co_return m.error();
    if (auto* e = std::get_if<ErrorMessage>(&m.value())) co_return peer_error(*e);
    co_return m;
}

template <typename T>
Result<T> expect(Result<Message> m, const char* name) {
    if (!m) return m.error();
    if (auto* v = std::get_if<T>(&m.value())) return std::move(*v);
    return make_error(Errc::unexpected_message, std::string("expected ") + name + ", got message type " +
                                                    std::to_string(unsigned(message_type(m.value()))));
}

// Always first: a peer of another protocol version or model is refused whatever the policy.
Status check_version_and_model(const Hello& mine, const Hello& theirs) {
    if (theirs.protocol_version != mine.protocol_version)
        return make_error(Errc::unsupported_version, "peer speaks protocol version " +
                                                         std::to_string(theirs.protocol_version));
    if (theirs.model_id != mine.model_id) {
        // The first bytes of each digest are enough for a person to tell which model is which.
        auto prefix = [](const Digest& d) {
            static const char* hex = "0123456789abcdef";
            std::string s;
            for (size_t i = 0; i < 8; ++i) s += {hex[d[i] >> 4], hex[d[i] & 15]};
            return s + "...";
        };
        return make_error(Errc::identity_mismatch, "model identity differs: the peer has " + prefix(theirs.model_id) +
                                                       ", this side " + prefix(mine.model_id));
    }
    return Ok{};
}

// The default policy: the dialer must ask for exactly this stage's layers, KV type and context.
Status check_layout(const Hello& mine, const Hello& theirs) {
    auto range = [](const Hello& h) {
        return "[" + std::to_string(h.layer_begin) + ", " + std::to_string(h.layer_end) + ")";
    };
    if (theirs.layer_begin != mine.layer_begin || theirs.layer_end != mine.layer_end)
        return make_error(Errc::identity_mismatch, "peer asks for layers " + range(theirs) + ", this stage holds " +
                                                       range(mine));
    if (theirs.kv_type != mine.kv_type || theirs.context_length != mine.context_length)
        return make_error(Errc::identity_mismatch, "KV cache type or context length differs");
    return Ok{};
}

// The acceptor's decision and its reply (before the nonce is filled in).
Result<Hello> decide(const HandshakeConfig& config, const Hello& dialer) {
    if (auto st = check_version_and_model(config.local, dialer); !st) return st.error();
    if (!config.accept_policy) {
        if (auto st = check_layout(config.local, dialer); !st) return st.error();
        return config.local;
    }
    Hello reply = config.local;
    if (auto st = config.accept_policy(dialer, reply); !st) return st.error();
    reply.protocol_version = config.local.protocol_version;
    reply.model_id = config.local.model_id;
    if (reply.layer_begin > reply.layer_end)
        return make_error(Errc::invalid_argument, "accept policy answered a reversed layer range [" +
                                                      std::to_string(reply.layer_begin) + ", " +
                                                      std::to_string(reply.layer_end) + ")");
    return reply;
}

}  // namespace

Error peer_error(const ErrorMessage& m) {
    const bool known = m.code >= uint32_t(Errc::bad_magic) && m.code <= uint32_t(kLastErrc);
    return make_error(known ? Errc(m.code) : Errc::unexpected_message, "peer reported: " + m.message);
}

// GCC 12 destroys some temporaries twice when they share a full expression with co_await
// (GCC bugs 99576, 100611): every co_await below takes named objects only.

Task<void> report_error(Connection& conn, const Error& e) {
    std::string text = e.detail.substr(0, kMaxErrorMessage);
    if (!is_valid_utf8(text)) text = to_string(e.code);  // a cut may split a character
    const Message m = ErrorMessage{uint32_t(e.code), std::move(text)};
    Status st = co_await send(conn, m, kReportTimeout);
    (void)st;  // best effort: the caller reports its own error either way
}

Task<Result<Hello>> dial_handshake(Connection& conn, HandshakeConfig config) {
    auto nonce = fresh_nonce();
    if (!nonce) co_return nonce.error();
    config.local.nonce = nonce.value();
    const Message hello = config.local;
    Status sent = co_await send(conn, hello, config.timeout);
    if (!sent) co_return sent.error();

    Result<Message> reply = co_await receive(conn, config.timeout);
    auto ack = expect<HelloAck>(std::move(reply), "hello_ack");
    if (!ack) co_return ack.error();
    auto mac = auth_mac(config.key, Role::dialer, ack.value().nonce);
    if (!mac) co_return mac.error();
    const Message answer = AuthResponse{mac.value()};
    sent = co_await send(conn, answer, config.timeout);
    if (!sent) co_return sent.error();

    Result<Message> reply2 = co_await receive(conn, config.timeout);
    auto proof = expect<AuthResponse>(std::move(reply2), "auth_response");
    if (!proof) co_return proof.error();
    Status verified = verify_auth(config.key, Role::acceptor, config.local.nonce, proof.value().mac);
    if (!verified) {
        const Error e = verified.error();
        co_await report_error(conn, e);
        co_return e;
    }
    co_return Hello(ack.value());
}

Task<Result<Hello>> accept_handshake(Connection& conn, HandshakeConfig config) {
    Result<Message> first = co_await receive(conn, config.timeout);
    auto hello = expect<Hello>(std::move(first), "hello");
    if (!hello) co_return hello.error();
    Result<Hello> decision = decide(config, hello.value());
    if (!decision) {
        const Error e = decision.error();
        co_await report_error(conn, e);
        co_return e;
    }
    auto nonce = fresh_nonce();
    if (!nonce) co_return nonce.error();
    config.local = decision.value();
    config.local.nonce = nonce.value();
    const Message ack = HelloAck{config.local};
    Status sent = co_await send(conn, ack, config.timeout);
    if (!sent) co_return sent.error();

    Result<Message> reply = co_await receive(conn, config.timeout);
    auto proof = expect<AuthResponse>(std::move(reply), "auth_response");
    if (!proof) co_return proof.error();
    Status verified = verify_auth(config.key, Role::dialer, config.local.nonce, proof.value().mac);
    if (!verified) {
        const Error e = verified.error();
        co_await report_error(conn, e);
        co_return e;
    }
    auto mac = auth_mac(config.key, Role::acceptor, hello.value().nonce);
    if (!mac) co_return mac.error();
    const Message answer = AuthResponse{mac.value()};
    sent = co_await send(conn, answer, config.timeout);
    if (!sent) co_return sent.error();
    co_return hello.value();
}

}  // namespace strata::transport
