// The worker's lifecycle (see worker.hpp): one io thread runs the listener and every
// connection's coroutine (worker_connection.cpp); one compute thread runs the stages.
#include "pipeline/worker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "gguf/digest.hpp"
#include "gguf/model_file.hpp"
#include "model/hparams.hpp"
#include "pipeline/worker_compute.hpp"
#include "pipeline/identity.hpp"
#include "pipeline/link_options.hpp"
#include "pipeline/worker_connection.hpp"
#include "util/error.hpp"
#if STRATA_TRANSPORT_HAS_UCX
#include "transport/ucx/ucx.hpp"
#endif

namespace strata::pipeline {
namespace asio = boost::asio;
using transport::Task;

namespace {

std::string computed_identity(const gguf::ModelFile& file) {
    std::vector<std::string> digests;
    for (const auto& shard : file.shards()) digests.push_back(gguf::sha256_file(shard.path));
    return gguf::model_identity(file, digests);
}

std::string host_name() {
    char buffer[256] = {};
    if (gethostname(buffer, sizeof buffer - 1) != 0) return "unknown";
    std::string name(buffer);
    if (name.size() > transport::kMaxStageText) name.resize(transport::kMaxStageText);
    return transport::is_valid_utf8(name) ? name : "unknown";
}

// "2026-11-29T22:55:08.123Z " (UTC, milliseconds).
std::string timestamp() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char text[64];
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ ", utc.tm_year + 1900, utc.tm_mon + 1,
                  utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, int(ms));
    return text;
}

}  // namespace

struct Worker::Impl {
    std::shared_ptr<const gguf::ModelFile> file;
    WorkerOptions options;
    std::mutex log_mutex;
    // Declared in destruction order: the compute thread is joined, then the listener and the
    // connections are closed, before the io_context they belong to goes.
    asio::io_context io;
    detail::ComputeThread compute{io};
    std::optional<transport::TcpListener> listener;
#if STRATA_TRANSPORT_HAS_UCX
    std::unique_ptr<transport::UcxListener> ucx_listener;  // instead of `listener` for rdma
#endif
    std::shared_ptr<transport::TlsContext> tls;  // set by bind() when options.tls is enabled
    detail::WorkerShared shared;
    std::map<uint64_t, std::weak_ptr<detail::PeerConnection>> peers;  // io thread only
    uint64_t next_peer = 0;
    std::atomic<bool> stop_requested{false};

    Impl(std::shared_ptr<const gguf::ModelFile> f, WorkerOptions o)
        : file(std::move(f)), options(std::move(o)), shared{*file, options, {}, {}, 0, 0, compute, {}, false} {
        const model::Hparams hp = model::read_hparams(*file);
        const uint32_t begin = options.fixed_layer_begin, end = options.fixed_layer_end;
        const bool any_range = begin == 0 && end == 0;
        if (!any_range && !(begin >= 1 && begin < end && end <= uint64_t(hp.n_layer)))
            fail(Status::invalid_argument,
                 "fixed layer range [" + std::to_string(options.fixed_layer_begin) + ", " +
                     std::to_string(options.fixed_layer_end) + ") must lie within [1, " + std::to_string(hp.n_layer) +
                     "] (layer 0 runs on the head), or be [0, 0) for any range");
        shared.model_id = parse_identity(options.model_identity.empty() ? computed_identity(*file)
                                                                        : options.model_identity);
        shared.n_embd = hp.n_embd;
        shared.n_vocab = hp.n_vocab;
        transport::StageInfo& info = shared.info;
        info.available_memory = options.stage.memory_budget;  // 0: measured at every query
        info.fixed_layer_begin = options.fixed_layer_begin;
        info.fixed_layer_end = options.fixed_layer_end;
        info.n_layers = uint32_t(hp.n_layer);
        info.n_threads = options.stage.n_threads > 0 ? uint32_t(options.stage.n_threads)
                                                     : std::max(1u, std::thread::hardware_concurrency());
        info.backend = options.stage.backend;
        info.host = host_name();
        shared.log = [this](const std::string& line) { log(line); };
    }

    void log(const std::string& line) {
        std::lock_guard lock(log_mutex);
        try {
            if (options.log)
                options.log(line);
            else
                std::fprintf(stderr, "%sstrata-worker: %s\n", timestamp().c_str(), line.c_str());
        } catch (...) {
            // A failing log sink must not take the worker down.
        }
    }

    Task<void> serve(std::shared_ptr<detail::PeerConnection> peer, uint64_t id) {
        auto serving = detail::serve_connection(shared, peer);
        co_await std::move(serving);
        peers.erase(id);
    }

    Task<void> accept_loop() {
        for (;;) {
            auto accepting = listener->accept_socket();
            transport::Result<asio::ip::tcp::socket> accepted = co_await std::move(accepting);
            if (stop_requested) co_return;
            if (!accepted) {
                // Out of descriptors or similar: say so and retry a little later instead of spinning.
                log("accept failed: " + accepted.error().detail);
                asio::steady_timer pause(io, std::chrono::milliseconds(100));
                co_await pause.async_wait(asio::use_awaitable);
                continue;
            }
            auto peer = std::make_shared<detail::PeerConnection>();
            if (tls) {
                // The TLS handshake runs in the connection's own coroutine, so that a slow or
                // silent peer holds up no other.
                auto conn = std::make_unique<transport::TlsConnection>(std::move(accepted.value()), tls, options.tcp);
                peer->tls_pending = conn.get();
                peer->conn = std::move(conn);
            } else {
                peer->conn = std::make_unique<transport::TcpConnection>(std::move(accepted.value()), options.tcp);
            }
            serve_peer(std::move(peer));
        }
    }

#if STRATA_TRANSPORT_HAS_UCX
    // The rdma listener's loop: each connection has its own UCX worker on this io_context.
    Task<void> ucx_accept_loop() {
        for (;;) {
            auto accepting = ucx_listener->accept();
            transport::Result<std::unique_ptr<transport::UcxConnection>> accepted = co_await std::move(accepting);
            if (stop_requested) co_return;
            if (!accepted) {
                if (accepted.error().code == transport::Errc::closed) co_return;
                log("accept failed: " + accepted.error().detail);
                asio::steady_timer pause(io, std::chrono::milliseconds(100));
                co_await pause.async_wait(asio::use_awaitable);
                continue;
            }
            auto peer = std::make_shared<detail::PeerConnection>();
            peer->conn = std::move(accepted.value());
            serve_peer(std::move(peer));
        }
    }
#endif

    // Names an accepted connection, keeps it among the peers and serves it in its own coroutine.
    void serve_peer(std::shared_ptr<detail::PeerConnection> peer) {
        peer->name = peer->conn->remote();
        const uint64_t id = next_peer++;
        if (peer->name.empty()) peer->name = "head #" + std::to_string(id);
        log("connection from " + peer->name);
        peers[id] = peer;
        asio::co_spawn(io, serve(peer, id), [this, peer, id](std::exception_ptr e) {
            if (!e) return;
            peers.erase(id);
            peer->heartbeat_stop->store(true);
            peer->conn->close();
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                log("closing " + peer->name + ": internal error: " + x.what());
            } catch (...) {
                log("closing " + peer->name + ": internal error");
            }
        });
    }

    bool bound() const {
#if STRATA_TRANSPORT_HAS_UCX
        if (ucx_listener) return true;
#endif
        return listener.has_value();
    }

    // On the io thread: no new connections, every open one closed (their coroutines end).
    void shut_down() {
        shared.stopping = true;
        if (listener) listener->close();
#if STRATA_TRANSPORT_HAS_UCX
        if (ucx_listener) ucx_listener->close();
#endif
        for (auto& [id, weak] : peers)
            if (auto peer = weak.lock()) {
                peer->heartbeat_stop->store(true);
                peer->conn->close();
            }
    }
};

Worker::Worker(std::shared_ptr<const gguf::ModelFile> file, WorkerOptions options)
    : impl_(std::make_unique<Impl>(std::move(file), std::move(options))) {}

Worker::~Worker() = default;

void Worker::bind() {
    Impl& w = *impl_;
    if (w.bound()) fail(Status::invalid_argument, "the worker is already bound");
    const std::string where = w.options.listen.to_string();
    w.options.transport = resolve_link_kind(w.options.transport, w.options.tls);
    // Throws when the key rule refuses the bound address; the listener closes as it goes out of scope.
    auto refuse_without_key = [&](bool loopback) {
        if (w.options.key.empty() && !w.options.allow_no_key && !loopback)
            fail(Status::invalid_argument, "refusing to serve " + where +
                                               " without a key: anyone who reaches it could use this machine; give a "
                                               "pre-shared key, listen on a loopback address, or allow no key explicitly");
    };
    if (w.options.transport == transport::LinkKind::rdma) {
#if STRATA_TRANSPORT_HAS_UCX
        auto context = transport::UcxContext::make(w.options.rdma);
        if (!context) fail(Status::invalid_argument, "cannot serve " + where + " over rdma: " + context.error().detail);
        auto bound = transport::UcxListener::bind(w.io.get_executor(), w.options.listen, context.value());
        if (!bound) fail(Status::io, "cannot listen on " + where + " over rdma: " + bound.error().detail);
        refuse_without_key(bound.value()->is_loopback());
        w.ucx_listener = std::move(bound.value());
        return;
#else
        fail(Status::unsupported, transport::link_kind_unavailable(transport::LinkKind::rdma));
#endif
    }
    auto bound = transport::TcpListener::bind(w.io.get_executor(), w.options.listen, w.options.tcp);
    if (!bound) fail(Status::io, "cannot listen on " + where + ": " + bound.error().detail);
    refuse_without_key(bound.value().is_loopback());
    if (w.options.tls.enabled()) {
        auto tls = transport::TlsContext::make(transport::TlsRole::acceptor, w.options.tls);
        if (!tls) {
            bound.value().close();
            fail(Status::invalid_argument, "cannot serve " + where + " with TLS: " + tls.error().detail);
        }
        w.tls = std::move(tls.value());
    }
    w.listener.emplace(std::move(bound.value()));
}

uint16_t Worker::port() const {
#if STRATA_TRANSPORT_HAS_UCX
    if (impl_->ucx_listener) return impl_->ucx_listener->port();
#endif
    return impl_->listener ? impl_->listener->port() : 0;
}

void Worker::run() {
    Impl& w = *impl_;
    if (!w.bound()) fail(Status::invalid_argument, "Worker::run: bind() first");
    w.log("serving on port " + std::to_string(port()) + " over " + transport::to_string(w.options.transport) +
          (w.options.fixed_layer_end > 0 ? ", layers [" + std::to_string(w.options.fixed_layer_begin) + ", " +
                                               std::to_string(w.options.fixed_layer_end) + ")"
                                         : ", any layer range") +
          (w.options.key.empty() ? ", no key" : ", key required") +
          (!w.tls                          ? ""
           : w.options.tls.verifies()      ? ", TLS with client certificates (mutual)"
                                           : ", TLS"));
#if STRATA_TRANSPORT_HAS_UCX
    auto loop = w.ucx_listener ? w.ucx_accept_loop() : w.accept_loop();
#else
    auto loop = w.accept_loop();
#endif
    asio::co_spawn(w.io, std::move(loop), [&w](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            w.log(std::string("listener failed: ") + x.what());
        } catch (...) {
            w.log("listener failed");
        }
        w.shut_down();
    });
    w.io.run();
    w.log("stopped");
}

void Worker::stop() {
    Impl& w = *impl_;
    w.stop_requested = true;
    asio::post(w.io, [&w] { w.shut_down(); });
}

}  // namespace strata::pipeline
