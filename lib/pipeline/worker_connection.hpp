// One head connection of a worker: handshake, then the stage-control requests in order, each
// answered once, until the head leaves, goes silent, breaks the protocol or the worker stops.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "pipeline/stage.hpp"
#include "pipeline/worker.hpp"
#include "pipeline/worker_compute.hpp"
#include "transport/tcp.hpp"
#include "transport/tls.hpp"

namespace strata::pipeline::detail {

// What every connection of a worker shares; lives in the Worker, touched on its io thread
// (the compute thread reads `file` and `options` only).
struct WorkerShared {
    const gguf::ModelFile& file;
    const WorkerOptions& options;
    transport::Digest model_id{};
    transport::StageInfo info;  // available_memory is measured again for every query
    int64_t n_embd = 0, n_vocab = 0;
    ComputeThread& compute;
    std::function<void(const std::string&)> log;
    bool stopping = false;
};

struct PeerConnection {
    std::string name;  // the head's address, for log lines
    std::unique_ptr<transport::LinkConnection> conn;  // a TcpConnection, TlsConnection or UcxConnection
    transport::TlsConnection* tls_pending = nullptr;     // conn, when its TLS handshake is still to run
    std::shared_ptr<std::atomic<bool>> heartbeat_stop = std::make_shared<std::atomic<bool>>(false);
    // The sequence; used by the compute thread only while the connection's coroutine awaits it.
    std::unique_ptr<Stage> stage;
};

// Serves one accepted connection to its end; never throws.
transport::Task<void> serve_connection(WorkerShared& shared, std::shared_ptr<PeerConnection> peer);

}  // namespace strata::pipeline::detail
