#include "pipeline/worker_connection.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <cstdio>
#include <optional>

#include "exec/memory/memory_plan.hpp"
#include "pipeline/worker_reply.hpp"
#include "transport/handshake.hpp"
#include "transport/send.hpp"

// GCC 12 destroys some temporaries twice when they share a full expression with co_await
// (see transport/handshake.cpp): every awaited call below is made into a named operation first.

namespace strata::pipeline::detail {
namespace asio = boost::asio;
using transport::Errc;
using transport::Message;
using transport::Task;

namespace {

std::string range_text(uint32_t begin, uint32_t end) {
    return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

bool has_fixed_range(const WorkerOptions& o) { return o.fixed_layer_end > o.fixed_layer_begin; }

// Which layer ranges a head may ask for at the handshake: with a fixed range, that range or
// [0, 0) (the head plans from memory; the reply tells it the fixed range); otherwise any.
transport::Status accept_range(const WorkerOptions& o, const transport::Hello& dialer, transport::Hello& reply) {
    reply.layer_begin = dialer.layer_begin;
    reply.layer_end = dialer.layer_end;
    reply.kv_type = dialer.kv_type;
    reply.context_length = dialer.context_length;
    if (!has_fixed_range(o)) return transport::Ok{};
    const bool planning = dialer.layer_begin == 0 && dialer.layer_end == 0;
    if (!planning && (dialer.layer_begin != o.fixed_layer_begin || dialer.layer_end != o.fixed_layer_end))
        return transport::make_error(Errc::identity_mismatch,
                                     "the head asks for layers " + range_text(dialer.layer_begin, dialer.layer_end) +
                                         ", this worker serves layers " +
                                         range_text(o.fixed_layer_begin, o.fixed_layer_end) + " only");
    reply.layer_begin = o.fixed_layer_begin;
    reply.layer_end = o.fixed_layer_end;
    return transport::Ok{};
}

// Frame-level damage: the stream has lost its framing and the connection cannot continue.
bool is_decode_error(Errc c) {
    switch (c) {
    case Errc::bad_magic:
    case Errc::unsupported_version:
    case Errc::unsupported_flags:
    case Errc::oversized_length:
    case Errc::checksum_mismatch:
    case Errc::truncated:
    case Errc::unknown_type:
    case Errc::malformed_payload: return true;
    default: return false;
    }
}

std::string error_text(const transport::Error& e) { return std::string(transport::to_string(e.code)) + ": " + e.detail; }

// "512 KiB", "7.3 MiB", "41.0 GiB": one decimal above KiB, for log lines.
std::string size_text(uint64_t bytes) {
    char text[32];
    if (bytes >= (uint64_t(1) << 30))
        std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(uint64_t(1) << 30));
    else if (bytes >= (uint64_t(1) << 20))
        std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / double(uint64_t(1) << 20));
    else
        std::snprintf(text, sizeof text, "%llu KiB", (unsigned long long)((bytes + 1023) >> 10));
    return text;
}

const char* kv_name(uint32_t code) { return code == 0 ? "f16" : code == 1 ? "q8_0" : "unknown"; }

std::string plan_text(const transport::StageReady& r, uint64_t kv_per_token) {
    std::string text = "weights " + size_text(r.weight_bytes) + ", KV cache " + size_text(r.kv_bytes) + " (" +
                       std::to_string(kv_per_token) + " B/token), scratch " + size_text(r.scratch_bytes) +
                       ", total " + size_text(r.total_bytes) + " of a " + size_text(r.budget_bytes) + " budget";
    for (size_t i = 0; i < r.recurrent_layers.size(); ++i)
        text += (i ? ", " : "; recurrent (KDA) layers ") + std::to_string(r.recurrent_layers[i]);
    return text;
}

// What one received message leads to: an answer to send (or none), and whether the
// connection ends after it (with the reason for the log).
struct Outcome {
    std::optional<Message> answer;
    std::string close_reason;
};

Outcome refuse_and_close(const std::string& reason) {
    return {Message(error_reply(transport::Error{Errc::unexpected_message, reason})), reason};
}

transport::StageInfo stage_info(const WorkerShared& shared) {
    transport::StageInfo info = shared.info;
    if (info.available_memory == 0) {
        try {
            const auto& free_memory = shared.options.stage.free_memory;
            info.available_memory = free_memory ? free_memory() : exec::available_memory_bytes();
        } catch (const Error&) {
            info.available_memory = 0;  // unknown: the head plans without this worker's figure
        }
    }
    return info;
}

Task<Outcome> configure(WorkerShared& shared, PeerConnection& peer, const transport::StageConfigure& c) {
    const WorkerOptions& o = shared.options;
    if (has_fixed_range(o) && (c.layer_begin != o.fixed_layer_begin || c.layer_end != o.fixed_layer_end)) {
        const std::string why = "this worker serves layers " + range_text(o.fixed_layer_begin, o.fixed_layer_end) +
                                " only, asked for " + range_text(c.layer_begin, c.layer_end);
        shared.log("refused configure from " + peer.name + ": " + why);
        co_return Outcome{Message(error_reply(Status::invalid_argument, why)), ""};
    }
    std::function<Message()> job = [&]() -> Message {
        peer.stage.reset();  // the previous sequence's memory goes before the new one is planned
        peer.stage = std::make_unique<Stage>(shared.file, c, o.stage);
        return peer.stage->ready();
    };
    auto operation = shared.compute.run(std::move(job));
    Message answer = co_await std::move(operation);
    if (auto* ready = std::get_if<transport::StageReady>(&answer))
        shared.log("configured " + peer.name + ": layers " + range_text(c.layer_begin, c.layer_end) + ", " +
                   kv_name(c.kv_type) + " KV cache, " + std::to_string(c.context_length) + " tokens, micro-batch " +
                   std::to_string(c.n_batch) + "; " + plan_text(*ready, peer.stage->kv_bytes_per_token()));
    else if (auto* e = std::get_if<transport::ErrorMessage>(&answer))
        shared.log("refused configure from " + peer.name + ": " + describe(*e));
    co_return Outcome{std::move(answer), ""};
}

// The bytes an answer to `f` would take on the wire, checked before anything runs so that a
// forward whose answer no frame can carry is refused with the stage unchanged.
std::optional<std::string> answer_too_large(const WorkerShared& shared, const Stage& stage,
                                            const transport::Forward& f) {
    using transport::ForwardOutput;
    uint64_t rows = 0, cols = 0;
    if (!stage.is_last()) {
        rows = f.tokens.size();
        cols = uint64_t(stage.hidden_out_width());
    } else if (f.output == ForwardOutput::logits_all || f.output == ForwardOutput::logits_last) {
        rows = f.output == ForwardOutput::logits_all ? f.tokens.size() : 1;
        cols = uint64_t(shared.n_vocab);
    }
    const uint64_t bytes = rows * cols * sizeof(float) + 256;  // + the tensor's own header
    if (bytes <= shared.options.tcp.max_payload) return std::nullopt;
    return "the answer would take " + std::to_string(bytes) + " bytes, more than the frame limit of " +
           std::to_string(shared.options.tcp.max_payload) + ": send fewer tokens per forward";
}

Task<Outcome> stage_request(WorkerShared& shared, PeerConnection& peer, const Message& m) {
    if (!peer.stage) co_return refuse_and_close("a stage request arrived before stage_configure");
    std::function<Message()> job;
    if (auto* f = std::get_if<transport::Forward>(&m)) {
        if (auto too_large = answer_too_large(shared, *peer.stage, *f))
            co_return Outcome{Message(error_reply(Status::invalid_argument, *too_large)), ""};
        job = [&peer, f] { return peer.stage->forward(*f); };
    } else if (auto* s = std::get_if<transport::SetSampling>(&m)) {
        job = [&peer, s]() -> Message {
            peer.stage->set_sampling(*s);
            return transport::Done{};
        };
    } else {
        const uint32_t n_top = std::get<transport::SampleRequest>(m).n_top;
        job = [&peer, n_top]() -> Message { return peer.stage->sample(n_top); };
    }
    auto operation = shared.compute.run(std::move(job));
    Message answer = co_await std::move(operation);
    if (auto* e = std::get_if<transport::ErrorMessage>(&answer))
        shared.log("refused a request from " + peer.name + ": " + describe(*e));
    co_return Outcome{std::move(answer), ""};
}

Task<Outcome> handle(WorkerShared& shared, PeerConnection& peer, const Message& m) {
    if (std::holds_alternative<transport::StageQuery>(m)) co_return Outcome{Message(stage_info(shared)), ""};
    if (auto* c = std::get_if<transport::StageConfigure>(&m)) {
        Outcome out = co_await configure(shared, peer, *c);
        co_return out;
    }
    if (std::holds_alternative<transport::Forward>(m) || std::holds_alternative<transport::SetSampling>(m) ||
        std::holds_alternative<transport::SampleRequest>(m)) {
        Outcome out = co_await stage_request(shared, peer, m);
        co_return out;
    }
    if (std::holds_alternative<transport::Bye>(m)) co_return Outcome{std::nullopt, "the head said bye"};
    if (auto* e = std::get_if<transport::ErrorMessage>(&m))
        co_return Outcome{std::nullopt, "the head reported " + describe(*e)};
    co_return refuse_and_close("message type " + std::to_string(unsigned(transport::message_type(m))) +
                               " is not a request a worker answers");
}

Task<void> keep_heartbeat(std::shared_ptr<PeerConnection> peer, transport::Timeout interval) {
    auto stop = peer->heartbeat_stop;
    auto loop = transport::heartbeat_loop(*peer->conn, interval, stop);
    co_await std::move(loop);
}

Task<std::string> handshake(WorkerShared& shared, PeerConnection& peer) {
    transport::HandshakeConfig config;
    config.local.model_id = shared.model_id;
    config.key = shared.options.key;
    config.timeout = shared.options.handshake_timeout;
    const WorkerOptions& o = shared.options;
    config.accept_policy = [&o](const transport::Hello& dialer, transport::Hello& reply) {
        return accept_range(o, dialer, reply);
    };
    auto operation = transport::accept_handshake(*peer.conn, std::move(config));
    transport::Result<transport::Hello> hello = co_await std::move(operation);
    if (!hello) co_return error_text(hello.error());
    const auto& h = hello.value();
    const std::string layers = h.layer_end > 0       ? "layers " + range_text(h.layer_begin, h.layer_end)
                               : has_fixed_range(o) ? "layers " + range_text(o.fixed_layer_begin, o.fixed_layer_end)
                                                    : "layers to be assigned";
    shared.log("handshake with " + peer.name + " ok: " + layers + ", " +
               kv_name(h.kv_type) + " KV cache, " + std::to_string(h.context_length) + " tokens");
    co_return std::string();
}

// The request loop; returns why the connection ended.
Task<std::string> serve_requests(WorkerShared& shared, std::shared_ptr<PeerConnection> peer) {
    const transport::Timeout timeout = shared.options.peer_timeout;
    for (;;) {
        transport::Result<transport::Frame> frame = co_await peer->conn->receive_frame(timeout);
        if (shared.stopping) co_return "the worker is stopping";
        if (!frame) {
            const transport::Error& e = frame.error();
            if (e.code == Errc::timed_out)
                co_return "silent for more than " + std::to_string(timeout.count()) + " ms";
            if (e.code == Errc::closed) co_return "the head closed the connection";
            if (is_decode_error(e.code)) co_await transport::report_error(*peer->conn, e);
            co_return error_text(e);
        }
        transport::Result<Message> message = transport::from_frame(frame.value());
        if (!message) {
            const transport::Error e = message.error();
            co_await transport::report_error(*peer->conn, e);
            co_return error_text(e);
        }
        const Message& m = message.value();
        if (std::holds_alternative<transport::Heartbeat>(m)) continue;
        Outcome out = co_await handle(shared, *peer, m);
        if (shared.stopping) co_return "the worker is stopping";
        if (out.answer) {
            transport::Status sent = co_await transport::send_message(*peer->conn, *out.answer, timeout);
            if (!sent) co_return "sending the answer failed: " + error_text(sent.error());
        }
        if (!out.close_reason.empty()) co_return out.close_reason;
    }
}

}  // namespace

// The TLS handshake of an accepted connection, under the handshake timeout; "" when it succeeded.
Task<std::string> tls_handshake(WorkerShared& shared, PeerConnection& peer) {
    transport::TlsConnection* tls = std::exchange(peer.tls_pending, nullptr);
    if (!tls) co_return std::string();
    const transport::Timeout timeout = shared.options.handshake_timeout;
    const auto deadline = transport::deadline_after(timeout);
    const std::string name = peer.name;
    transport::Status shaken = co_await tls->handshake(deadline, timeout, name);
    if (!shaken) co_return error_text(shaken.error());
    const auto agreed = tls->tls();
    if (agreed) shared.log("TLS with " + peer.name + ": " + agreed->version + ", " + agreed->cipher);
    co_return std::string();
}

Task<void> serve_connection(WorkerShared& shared, std::shared_ptr<PeerConnection> peer) {
    std::string tls_refusal = co_await tls_handshake(shared, *peer);
    if (!tls_refusal.empty()) {
        shared.log("refused " + peer->name + ": " + tls_refusal);
        peer->conn->close();
        co_return;
    }
    std::string refusal = co_await handshake(shared, *peer);
    if (!refusal.empty()) {
        shared.log("refused " + peer->name + ": " + refusal);
        peer->conn->close();
        co_return;
    }
    auto executor = co_await asio::this_coro::executor;
    asio::co_spawn(executor, keep_heartbeat(peer, shared.options.heartbeat), asio::detached);

    auto requests = serve_requests(shared, peer);
    std::string reason = co_await std::move(requests);
    peer->heartbeat_stop->store(true);
    peer->conn->close();
    std::string freed;
    if (peer->stage) {
        freed = " (sequence freed: " + size_text(peer->stage->ready().kv_bytes) + " of KV cache)";
        // Freed on the compute thread, behind any job of this stage still queued: a GPU stage's
        // cudaFree synchronizes the device, which must neither stall this io thread (every
        // peer's heartbeats) nor land in the middle of another stage's kernels or graph capture.
        std::function<Message()> job = [peer]() -> Message {
            peer->stage.reset();
            return transport::Done{};
        };
        auto operation = shared.compute.run(std::move(job));
        co_await std::move(operation);
    }
    shared.log("closing " + peer->name + ": " + reason + freed);
}

}  // namespace strata::pipeline::detail
