// A pipeline worker: listens on TCP, answers handshakes (model identity, protocol version,
// layer range, pre-shared key), and serves each accepted head connection as one sequence
// (its own Stage and KV cache). A connection that misbehaves (malformed, truncated, oversized
// or out-of-order frames, silence past the peer timeout) is closed with a logged reason; the
// worker keeps serving the others. Compute for all connections runs on one compute thread at a
// time, so that heartbeats keep flowing while a stage computes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/stage.hpp"
#include "transport/tcp.hpp"
#include "transport/link_kind.hpp"
#include "transport/tls.hpp"
#include "transport/ucx/ucx_options.hpp"

namespace strata::gguf {
class ModelFile;
}

namespace strata::pipeline {

struct WorkerOptions {
    transport::Endpoint listen{"127.0.0.1", 0};
    std::vector<uint8_t> key;               // pre-shared key (empty: only allowed on loopback, see allow_no_key)
    bool allow_no_key = false;              // serve a non-loopback address without a key
    uint32_t fixed_layer_begin = 0;         // --layers A:B; [0, 0): any range the head assigns
    uint32_t fixed_layer_end = 0;
    StageOptions stage;
    transport::TcpOptions tcp;
    // TLS on every connection when enabled(): cert_file and key_file are this worker's; with a
    // ca_file, heads must present a certificate that chains to it (mutual TLS). The TLS
    // handshake runs under handshake_timeout; the pre-shared key is still asked for inside TLS.
    transport::TlsOptions tls;
    // What connections arrive on: tcp (tls when the TLS files are set), tls, or rdma (UCX's
    // listener on the same address, with `rdma`'s settings). A transport this build lacks is
    // Error(unsupported) from bind(), naming it.
    transport::LinkKind transport = transport::LinkKind::tcp;
    transport::UcxOptions rdma;
    transport::Timeout heartbeat{1000};     // heartbeat interval on every connection
    transport::Timeout peer_timeout{5000};  // a head silent this long is gone: its sequence is freed
    transport::Timeout handshake_timeout{5000};
    std::function<void(const std::string&)> log;  // one line per event; default: stderr with a timestamp
    // The model identity digest (64 hex characters, as gguf::model_identity gives it) when the
    // caller already has it (the C ABI's cached one; tests of in-memory models); "": computed
    // from the shards at construction, shard digests cached in the default place.
    std::string model_identity;
};

class Worker {
public:
    // Opens nothing yet; the model's identity digest is computed here (shard digests cached).
    Worker(std::shared_ptr<const gguf::ModelFile> file, WorkerOptions options);
    ~Worker();

    // Binds the listening socket; throws strata::Error(io) naming the endpoint on failure, or
    // invalid_argument when a non-loopback address has no key and allow_no_key is false (TLS
    // or not), or when the TLS files do not load (the detail names the file and why).
    void bind();
    uint16_t port() const;  // after bind()
    // Serves until stop() (from any thread or a signal-safe flag watcher). Blocks.
    void run();
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace strata::pipeline
