// The connection handshake (PROTOCOL.md, "Handshake and authentication"): hello exchange,
// identity check, then mutual proof of the pre-shared key. Either side that refuses sends an
// error frame first, so both ends report the same specific error.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "transport/connection.hpp"
#include "transport/messages.hpp"

namespace strata::transport {

struct HandshakeConfig {
    Hello local;               // what this side is; its nonce is filled in fresh
    std::vector<uint8_t> key;  // the pre-shared key
    Timeout timeout{5000};     // per step
    // Acceptor only. When set, it replaces the comparison of layer range, KV type and context
    // length (protocol version and model identity are always compared first): it sees the
    // dialer's hello and may fill the reply's layer range, KV type and context length (the reply
    // starts as `local`; its version, model identity and nonce are not the policy's to change).
    // An error it returns is sent to the dialer and returned by accept_handshake; use
    // identity_mismatch with a message that names the mismatch. It runs before the dialer has
    // proved the key: decide here, commit resources after accept_handshake succeeds.
    std::function<Status(const Hello& dialer, Hello& reply)> accept_policy;
};

// Dialer side: returns the acceptor's hello_ack once both proofs succeeded.
Task<Result<Hello>> dial_handshake(Connection& conn, HandshakeConfig config);

// Acceptor side: refuses a dialer whose protocol version, model identity, layer range, KV type
// or context length differ from config.local (or that config.accept_policy refuses). Returns the
// dialer's hello.
Task<Result<Hello>> accept_handshake(Connection& conn, HandshakeConfig config);

// Sends an error frame for `e` (best effort, short deadline) so the peer learns why.
Task<void> report_error(Connection& conn, const Error& e);

// An error frame received from the peer, as the Error it reports.
Error peer_error(const ErrorMessage& m);

}  // namespace strata::transport
