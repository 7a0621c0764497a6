#include "pipeline/head.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <cstring>
#include <future>
#include <optional>
#include <thread>

#include "gguf/model_file.hpp"
#include "model/hparams.hpp"
#include "pipeline/head_link.hpp"
#include "pipeline/head_report.hpp"
#include "pipeline/link_options.hpp"
#include "pipeline/recurrent_layers.hpp"
#include "pipeline/wire_tensor.hpp"
#include "transport/handshake.hpp"
#include "transport/send.hpp"
#if STRATA_TRANSPORT_HAS_UCX
#include "transport/ucx/ucx.hpp"
#endif

namespace strata::pipeline {
namespace asio = boost::asio;
using detail::Call;
using detail::Clock;
using detail::Link;
using detail::Pending;
using transport::ForwardOutput;
using transport::Message;
using transport::Task;

namespace {

using Outcome = std::optional<Error>;

uint32_t kv_code(exec::KvType t) { return t == exec::KvType::q8_0 ? 1 : 0; }

transport::SetSampling to_wire(const sample::SamplerParams& p) {
    transport::SetSampling s;
    s.temperature = p.temperature;
    s.top_p = p.top_p;
    s.min_p = p.min_p;
    s.repeat_penalty = p.repeat_penalty;
    s.top_k = p.top_k;
    s.repeat_last_n = p.repeat_last_n;
    s.seed = p.seed;
    return s;
}

// Runs a coroutine on the io thread and blocks the caller until it finishes.
template <typename T>
T run_blocking(asio::io_context& io, Task<T> task) {
    std::promise<T> done;
    auto result = done.get_future();
    asio::co_spawn(io, std::move(task), [&done](std::exception_ptr e, T value) {
        if (e) done.set_exception(e);
        else done.set_value(std::move(value));
    });
    return result.get();
}

}  // namespace

struct Head::Impl {
    std::shared_ptr<const gguf::ModelFile> file;
    transport::Digest model_id{};
    HeadOptions options;
    model::Hparams hp;
    std::string planned_by;
    std::vector<LayerRange> plan;

    asio::io_context io;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::thread io_thread;

    std::unique_ptr<exec::Context> ctx;
    std::shared_ptr<transport::TlsContext> tls;  // made on the first dial when options.tls is enabled
#if STRATA_TRANSPORT_HAS_UCX
    std::shared_ptr<transport::UcxContext> ucx;  // made on the first dial over rdma
#endif
    std::vector<std::shared_ptr<Link>> links;
    std::atomic<bool> broken{false};
    sample::SamplerParams sampling;
    bool has_row = false;         // the last stage keeps a row to sample from
    double head_compute_seconds = 0;
    std::vector<float> hidden;    // the head's output before it is encoded for the wire
    uint64_t forward_calls = 0;
    std::mutex call_mutex;        // one sequence operation at a time

    ~Impl() { shutdown(); }

    // --- io thread --------------------------------------------------------------------------

    void fail_link(const std::shared_ptr<Link>& link, const Error& error) {
        if (link->failed) return;
        link->failed = true;
        link->failure = error;
        link->failed_flag = true;
        broken = true;
        *link->heartbeat_stop = true;
        if (link->conn) link->conn->close();
        for (auto& p : link->pending) p.call->fail(p.part, error);
        link->pending.clear();
    }

    void dispatch(size_t index, Pending pending, Message message) {
        const auto& link = links[index];
        if (link->failed) {
            pending.call->fail(pending.part, *link->failure);
            return;
        }
        pending.sent = Clock::now();
        link->pending.push_back(std::move(pending));
        asio::co_spawn(io, send_one(link, std::move(message)), asio::detached);
    }

    Task<void> send_one(std::shared_ptr<Link> link, Message message) {
        const transport::Timeout timeout = options.peer_timeout;
        transport::Status sent = co_await transport::send_message(*link->conn, message, timeout);
        if (!sent) fail_link(link, detail::link_error(*link, sent.error(), "send failed"));
    }

    void on_reply(size_t index, Message reply) {
        const auto& link = links[index];
        if (link->pending.empty()) {
            fail_link(link, Error(Status::stage_failed, link->name() + " sent a reply nobody asked for (message type " +
                                                            std::to_string(unsigned(transport::message_type(reply))) + ")"));
            return;
        }
        Pending p = std::move(link->pending.front());
        link->pending.pop_front();
        {
            const double us = std::chrono::duration<double, std::micro>(Clock::now() - p.sent).count();
            std::lock_guard lock(link->stats_mutex);
            ++link->stats.requests;
            link->stats.all.add(us);
            if (p.tokens.size() == 1) link->stats.single_token.add(us);
        }
        if (auto* e = std::get_if<transport::ErrorMessage>(&reply)) {
            {
                std::lock_guard lock(link->stats_mutex);
                ++link->stats.refused;
            }
            p.call->fail(p.part, detail::remote_error(*link, *e));
            return;
        }
        if (p.call->failed()) {
            p.call->drop(p.part);
            return;
        }
        if (p.relay && index + 1 < links.size()) {
            auto* hidden = std::get_if<transport::Tensor>(&reply);
            if (!hidden) {
                fail_link(link, Error(Status::stage_failed, link->name() + " answered a forward with message type " +
                                                                std::to_string(unsigned(transport::message_type(reply))) +
                                                                ", expected hidden states"));
                return;
            }
            const bool next_is_last = index + 2 == links.size();
            transport::Forward f;
            f.position = p.position;
            f.output = next_is_last ? p.final_output : ForwardOutput::hidden;
            f.n_top = next_is_last ? p.n_top : 0;
            f.tokens = p.tokens;
            f.hidden = std::move(*hidden);
            p.relay = !next_is_last;
            dispatch(index + 1, std::move(p), Message(std::move(f)));
            return;
        }
        p.call->complete(p.part, std::move(reply));
    }

    Task<void> receive_loop(size_t index, std::shared_ptr<Link> link) {
        const transport::Timeout timeout = options.peer_timeout;
        for (;;) {
            transport::Result<transport::Frame> frame = co_await link->conn->receive_frame(timeout);
            if (link->failed) co_return;  // closed on purpose (shutdown, another failure)
            if (!frame) {
                const char* doing = frame.error().code == transport::Errc::timed_out ? "went silent" : "failed";
                fail_link(link, detail::link_error(*link, frame.error(), doing));
                co_return;
            }
            if (frame.value().type == transport::MessageType::heartbeat) continue;
            auto message = transport::from_frame(frame.value());
            if (!message) {
                fail_link(link, detail::link_error(*link, message.error(), "sent a malformed message"));
                co_return;
            }
            on_reply(index, std::move(message.value()));
            if (link->failed) co_return;
        }
    }

    // Receives the next message that is not a heartbeat during set-up.
    Task<transport::Result<Message>> receive_setup(Link& link) {
        const transport::Timeout timeout = options.connect_timeout;
        for (;;) {
            transport::Result<transport::Frame> frame = co_await link.conn->receive_frame(timeout);
            if (!frame) co_return frame.error();
            if (frame.value().type == transport::MessageType::heartbeat) continue;
            auto message = transport::from_frame(frame.value());
            co_return message;
        }
    }

    template <typename Reply>
    Task<Outcome> request_setup(Link& link, Message request, Reply& out, const char* what) {
        const transport::Timeout timeout = options.connect_timeout;
        transport::Status sent = co_await transport::send_message(*link.conn, request, timeout);
        if (!sent) co_return detail::link_error(link, sent.error(), what);
        transport::Result<Message> reply = co_await receive_setup(link);
        if (!reply) co_return detail::link_error(link, reply.error(), what);
        if (auto* e = std::get_if<transport::ErrorMessage>(&reply.value())) co_return detail::remote_error(link, *e);
        if (auto* r = std::get_if<Reply>(&reply.value())) {
            out = std::move(*r);
            co_return std::nullopt;
        }
        co_return Error(Status::stage_failed, link.name() + " " + what + ": unexpected message type " +
                                                  std::to_string(unsigned(transport::message_type(reply.value()))));
    }

    // Dial, handshake, ask what the worker can hold.
    Task<Outcome> connect_link(std::shared_ptr<Link> link) {
        auto ex = io.get_executor();
        const transport::Timeout timeout = options.connect_timeout;
        const transport::TcpOptions tcp = options.tcp;
        const transport::Endpoint to = link->endpoint;
        std::unique_ptr<transport::LinkConnection> conn;
        std::optional<transport::Error> failure;
        if (options.transport == transport::LinkKind::rdma) {
#if STRATA_TRANSPORT_HAS_UCX
            if (!ucx) {
                auto made = transport::UcxContext::make(options.rdma);
                if (!made) co_return Error(Status::invalid_argument, link->name() + ": rdma: " + made.error().detail);
                ucx = made.value();
            }
            const std::shared_ptr<transport::UcxContext> context = ucx;
            auto dialed = co_await transport::ucx_dial(ex, to, context, timeout);
            if (dialed) conn = std::move(dialed.value());
            else failure = dialed.error();
#else
            co_return Error(Status::unsupported, transport::link_kind_unavailable(transport::LinkKind::rdma));
#endif
        } else if (options.tls.enabled()) {
            if (!tls) {
                auto made = transport::TlsContext::make(transport::TlsRole::dialer, options.tls);
                if (!made) co_return Error(Status::invalid_argument, link->name() + ": " + made.error().detail);
                tls = made.value();
            }
            const std::shared_ptr<transport::TlsContext> context = tls;
            auto dialed = co_await transport::tls_dial(ex, to, tcp, context, timeout);
            if (dialed) conn = std::move(dialed.value());
            else failure = dialed.error();
        } else {
            auto dialed = co_await transport::tcp_dial(ex, to, tcp, timeout);
            if (dialed) conn = std::move(dialed.value());
            else failure = dialed.error();
        }
        if (!conn) {
            // The worker (or what answers at its address) refused TLS or our certificate.
            if (failure->code == transport::Errc::tls_failed)
                co_return Error(Status::refused, link->name() + ": TLS refused: " + failure->detail);
            std::string what = link->name() + ": cannot connect: " + std::string(transport::to_string(failure->code));
            if (!failure->detail.empty()) what += " (" + failure->detail + ")";
            co_return Error(Status::io, what);
        }
        link->conn = std::move(conn);
        transport::HandshakeConfig config;
        config.local.model_id = model_id;
        config.local.layer_begin = uint32_t(link->layers.first);
        config.local.layer_end = uint32_t(link->layers.second);
        config.local.kv_type = kv_code(options.context.kv_type);
        config.local.context_length = uint32_t(ctx_length());
        config.key = options.key;
        config.timeout = timeout;
        transport::Result<transport::Hello> ack = co_await transport::dial_handshake(*link->conn, config);
        if (!ack) {
            transport::Error e = ack.error();
            // A TLS worker closes a connection that does not start with a TLS handshake.
            if (!options.tls.enabled() && e.code == transport::Errc::closed)
                e.detail += "; a worker that requires TLS closes connections in clear: is tls_ca_file missing?";
            co_return detail::link_error(*link, e, "handshake failed");
        }
        link->ack = ack.value();
        link->socket = link->conn->socket();
        link->tls = link->conn->tls();
        link->ucx = link->conn->ucx();
        Outcome queried = co_await request_setup(*link, Message(transport::StageQuery{}), link->info, "stage query");
        co_return queried;
    }

    // A configured worker's reading of its layers must be the head's: the range asked for, and
    // the same recurrent (KDA) layers, or the two sides would keep different state for a layer.
    Outcome check_ready(const Link& link) const {
        const transport::StageReady& r = link.ready;
        const auto begin = uint32_t(link.layers.first), end = uint32_t(link.layers.second);
        if (r.layer_begin != begin || r.layer_end != end)
            return Error(Status::refused, link.name() + ": the worker configured layers " +
                                              std::to_string(r.layer_begin) + ":" + std::to_string(r.layer_end) +
                                              ", not the range asked for");
        const std::string diff = recurrent_layers_difference(recurrent_layers(hp, begin, end), r.recurrent_layers);
        if (!diff.empty())
            return Error(Status::refused, link.name() + ": the worker reads the model's layers differently from the "
                                                        "head: " + diff);
        return std::nullopt;
    }

    Task<Outcome> configure_link(std::shared_ptr<Link> link, bool last) {
        transport::StageConfigure c;
        c.layer_begin = uint32_t(link->layers.first);
        c.layer_end = uint32_t(link->layers.second);
        c.kv_type = kv_code(options.context.kv_type);
        c.context_length = uint32_t(ctx_length());
        c.n_batch = uint32_t(options.n_batch);
        Outcome configured = co_await request_setup(*link, Message(c), link->ready, "configure");
        if (!configured) configured = check_ready(*link);
        if (configured || !last) co_return configured;
        transport::Done done;
        Outcome sampled = co_await request_setup(*link, Message(to_wire(sampling)), done, "set sampling");
        co_return sampled;
    }

    Task<Outcome> connect_all() {
        for (auto& link : links) {
            Outcome o = co_await connect_link(link);
            if (o) co_return o;
        }
        co_return std::nullopt;
    }

    // Holds the link (and so its connection) alive for as long as the loop runs.
    Task<void> heartbeat(std::shared_ptr<Link> link) {
        co_await transport::heartbeat_loop(*link->conn, options.heartbeat, link->heartbeat_stop);
    }

    Task<Outcome> configure_all() {
        for (size_t i = 0; i < links.size(); ++i) {
            Outcome o = co_await configure_link(links[i], i + 1 == links.size());
            if (o) co_return o;
        }
        for (size_t i = 0; i < links.size(); ++i) {
            asio::co_spawn(io, receive_loop(i, links[i]), asio::detached);
            asio::co_spawn(io, heartbeat(links[i]), asio::detached);
        }
        co_return std::nullopt;
    }

    // --- caller thread ----------------------------------------------------------------------

    int64_t ctx_length() const { return ctx ? ctx->n_ctx() : options.context.n_ctx; }

    void start_io() {
        work.emplace(asio::make_work_guard(io));
        io_thread = std::thread([this] { io.run(); });
    }

    void close_links() {
        if (links.empty()) return;
        std::promise<void> closed;
        asio::post(io, [&] {
            for (auto& link : links) {
                *link->heartbeat_stop = true;
                if (!link->failed) {
                    link->failed = true;  // quiet: the receive loop sees it and stops
                    link->failure = Error(Status::stage_failed, link->name() + ": the pipeline was closed");
                    link->failed_flag = true;
                    if (link->conn) link->conn->close();
                }
            }
            closed.set_value();
        });
        closed.get_future().wait();
    }

    void shutdown() {
        if (!io_thread.joinable()) return;
        close_links();
        work.reset();
        io.stop();
        io_thread.join();
    }

    // Connect, plan, configure: the whole set-up, used by the constructor and reconnect().
    void connect() {
        const int n_layers = int(hp.n_layer);
        const size_t n_stages = options.workers.size() + 1;
        links.clear();
        for (size_t i = 0; i < options.workers.size(); ++i) {
            auto link = std::make_shared<Link>();
            link->stage = i + 1;
            link->endpoint = options.workers[i];
            if (!plan.empty()) link->layers = plan[i + 1];
            links.push_back(link);
        }
        if (Outcome o = run_blocking(io, connect_all())) throw *o;

        if (plan.empty()) plan = choose_plan(n_layers, n_stages);
        for (size_t i = 0; i < links.size(); ++i) links[i]->layers = plan[i + 1];

        if (ctx && ctx->first_layer() == plan[0].first && ctx->last_layer() == plan[0].second) {
            ctx->reset();  // reconnecting with the executed plan: the head's own stage stays
        } else {
            exec::ContextParams cp = options.context;
            cp.first_layer = plan[0].first;
            cp.last_layer = plan[0].second;
            cp.n_batch = options.n_batch;
            ctx = std::make_unique<exec::Context>(*file, cp);  // throws out_of_memory with the plan
        }
        if (Outcome o = run_blocking(io, configure_all())) throw *o;
        broken = false;
        has_row = false;
    }

    std::vector<LayerRange> choose_plan(int n_layers, size_t n_stages) {
        // Workers started with --layers fix their ranges; then the head holds what comes before.
        size_t fixed = 0;
        for (const auto& link : links) fixed += link->ack.layer_end > link->ack.layer_begin ? 1 : 0;
        if (fixed == links.size()) {
            std::vector<LayerRange> p{{0, int(links.front()->ack.layer_begin)}};
            for (const auto& link : links) p.emplace_back(int(link->ack.layer_begin), int(link->ack.layer_end));
            check_layer_plan(p, n_layers, n_stages);
            planned_by = "worker ranges (--layers)";
            return p;
        }
        if (fixed != 0)
            fail(Status::invalid_argument, "some workers serve fixed layer ranges and others do not: give the plan "
                                           "explicitly (layers)");
        const int64_t n_ctx = options.context.n_ctx > 0 ? options.context.n_ctx
                                                        : std::min<int64_t>(hp.n_ctx_train > 0 ? hp.n_ctx_train : 4096, 4096);
        const LayerCosts costs = layer_costs(*file, n_ctx, options.context.kv_type);
        std::vector<uint64_t> capacity{options.context.memory_budget ? options.context.memory_budget
                                                                     : exec::available_memory_bytes()};
        planned_by = "memory (each stage's reported free memory)";
        std::optional<uint64_t> gpu_scratch;
        for (const auto& link : links) {
            uint64_t free_bytes = link->info.available_memory;
            if (link->info.backend == "cuda" && options.gpu_stage_scratch_bytes) {
                if (!gpu_scratch) gpu_scratch = gpu_stage_scratch(n_layers, n_ctx);
                free_bytes = gpu_stage_capacity(free_bytes, *gpu_scratch);
                planned_by = "memory (each stage's reported free memory; GPU stages less " +
                             std::to_string(*gpu_scratch) + " bytes of device scratch)";
            }
            capacity.push_back(free_bytes);
        }
        return plan_by_memory(costs, capacity);
    }

    // The device scratch of a GPU stage over every layer a worker could get (an upper bound: the
    // scratch grows with the kinds of layer a range holds). 0 when the GPU cannot run the model:
    // the worker's configure then says why.
    uint64_t gpu_stage_scratch(int n_layers, int64_t n_ctx) const {
        exec::ContextParams cp;
        cp.first_layer = 1;
        cp.last_layer = n_layers;
        cp.n_ctx = n_ctx;
        cp.n_batch = options.n_batch;
        cp.kv_type = options.context.kv_type;
        try {
            return options.gpu_stage_scratch_bytes(*file, cp);
        } catch (const Error&) {
            return 0;
        }
    }

    void check_usable() const {
        if (!broken) return;
        for (const auto& link : links)
            if (link->failed_flag)
                throw Error(Status::stage_failed, link->failure ? link->failure->what() + std::string("; reconnect the "
                                                                  "pipeline, then reset the session")
                                                                : link->name() + " failed");
        throw Error(Status::stage_failed, "the pipeline failed; reconnect it, then reset the session");
    }

    // Runs tokens through every stage in micro-batches; returns each part's final reply.
    std::vector<Message> forward(std::span<const int32_t> tokens, ForwardOutput final_output,
                                 ForwardOutput part_output, uint32_t n_top) {
        check_usable();
        exec::check_decode(tokens, hp.n_vocab, ctx->n_past(), ctx->n_ctx());
        const int64_t start = ctx->n_past();
        const size_t n = tokens.size();
        const size_t batch = size_t(options.n_batch);
        const size_t parts = (n + batch - 1) / batch;
        auto call = std::make_shared<Call>(parts);
        const bool single_link = links.size() == 1;
        ++forward_calls;
        size_t posted = 0;
        try {
            for (size_t k = 0; k < parts; ++k, ++posted) {
                const size_t begin = k * batch, count = std::min(batch, n - begin);
                const auto part_tokens = tokens.subspan(begin, count);
                transport::Forward f;
                f.position = uint64_t(start) + begin;
                f.tokens.assign(part_tokens.begin(), part_tokens.end());
                const auto t0 = Clock::now();
                if (options.wire_dtype == transport::DType::f32) {
                    // The head's layers write straight into the bytes that go on the wire.
                    f.hidden.dtype = transport::DType::f32;
                    f.hidden.dims = {uint64_t(count), uint64_t(ctx->hidden_out_width())};
                    f.hidden.data.resize(count * size_t(ctx->hidden_out_width()) * sizeof(float));
                    ctx->decode(part_tokens, reinterpret_cast<float*>(f.hidden.data.data()));
                } else {
                    hidden.resize(count * size_t(ctx->hidden_out_width()));
                    ctx->decode(part_tokens, hidden.data());
                    f.hidden = encode_hidden(hidden, count, uint64_t(ctx->hidden_out_width()), options.wire_dtype);
                }
                head_compute_seconds += std::chrono::duration<double>(Clock::now() - t0).count();

                const ForwardOutput last_output = k + 1 == parts ? final_output : part_output;
                Pending p;
                p.call = call;
                p.part = k;
                p.relay = !single_link;
                p.position = f.position;
                p.tokens = f.tokens;
                p.final_output = last_output;
                p.n_top = k + 1 == parts ? n_top : 0;
                f.output = single_link ? last_output : ForwardOutput::hidden;
                f.n_top = single_link ? p.n_top : 0;
                asio::post(io, [this, p = std::move(p), f = std::move(f)]() mutable {
                    dispatch(0, std::move(p), Message(std::move(f)));
                });
            }
        } catch (...) {
            // The head's own layers failed after some parts left: wait for those, then undo.
            for (size_t k = posted; k < parts; ++k) call->drop(k);
            try {
                (void)call->wait();
            } catch (...) {
            }
            undo(start);
            throw;
        }
        try {
            return call->wait();
        } catch (...) {
            undo(start);  // the workers truncate too: the next forward starts at `start`
            has_row = false;
            throw;
        }
    }

    // Back to `start` after a failed call; a recurrent (KDA) state cannot roll back, so such a
    // sequence is marked lost instead (the caller sees the error now and on the next call).
    void undo(int64_t start) {
        if (ctx->can_truncate(start)) ctx->truncate(start);
        else
            ctx->mark_lost("a failed call left this sequence's recurrent (KDA) state past position " +
                           std::to_string(start) + ", and a recurrent state cannot roll back");
    }

    Message control(Message request) {
        check_usable();
        auto call = std::make_shared<Call>(1);
        Pending p;
        p.call = call;
        asio::post(io, [this, p = std::move(p), request = std::move(request)]() mutable {
            dispatch(links.size() - 1, std::move(p), std::move(request));
        });
        auto replies = call->wait();
        return std::move(replies.front());
    }
};

Head::Head(std::shared_ptr<const gguf::ModelFile> file, const transport::Digest& model_id, HeadOptions options,
           const sample::SamplerParams& sampling)
    : impl_(std::make_unique<Impl>()) {
    auto& m = *impl_;
    if (options.workers.empty()) fail(Status::invalid_argument, "a pipeline needs at least one worker");
    if (options.n_batch <= 0)
        fail(Status::invalid_argument, "n_batch is " + std::to_string(options.n_batch) + ", expected at least 1");
    sample::validate(sampling);
    m.file = std::move(file);
    m.model_id = model_id;
    m.hp = model::read_hparams(*m.file);
    m.sampling = sampling;
    m.plan = options.layers;
    m.options = std::move(options);
    m.options.transport = resolve_link_kind(m.options.transport, m.options.tls);
    if (!m.plan.empty()) {
        check_layer_plan(m.plan, int(m.hp.n_layer), m.options.workers.size() + 1);
        m.planned_by = "explicit";
    }
    m.start_io();
    m.connect();
}

Head::~Head() = default;

std::string Head::plan_json() const {
    return detail::plan_json(*impl_->ctx, impl_->plan, impl_->planned_by, impl_->links, impl_->options);
}

std::string Head::stats_json() const {
    return detail::stats_json(impl_->links, impl_->head_compute_seconds, impl_->forward_calls);
}

void Head::reconnect() {
    auto& m = *impl_;
    std::lock_guard lock(m.call_mutex);
    m.close_links();
    m.ctx->reset();  // the sequence restarts empty; the head's stage (and its plan) stays
    m.has_row = false;
    try {
        m.connect();
    } catch (...) {
        m.broken = true;
        m.close_links();
        throw;
    }
}

bool Head::failed() const { return impl_->broken; }

int64_t Head::n_ctx() const { return impl_->ctx->n_ctx(); }
int64_t Head::n_past() const { return impl_->ctx->n_past(); }
int64_t Head::n_vocab() const { return impl_->hp.n_vocab; }

std::string Head::plan() const {
    auto& m = *impl_;
    std::string text = "stage 0 (head, layers " + std::to_string(m.plan[0].first) + ":" +
                       std::to_string(m.plan[0].second) + "): " + m.ctx->plan().describe();
    // A worker's KV bytes per token are not in stage_ready: computed here from the model.
    for (const auto& link : m.links) {
        const auto& r = link->ready;
        const uint64_t kv_per_token =
            exec::kv_bytes_per_position_range(m.hp, m.options.context.kv_type, link->layers.first, link->layers.second);
        text += "\n" + link->name() + ": weights " + std::to_string(r.weight_bytes) + " B, KV cache " +
                std::to_string(r.kv_bytes) + " B (" + std::to_string(kv_per_token) + " B/token), scratch " +
                std::to_string(r.scratch_bytes) + " B, total " +
                std::to_string(r.total_bytes) + " B of " + std::to_string(r.budget_bytes) + " B";
    }
    return text;
}

const sample::SamplerParams& Head::sampling() const { return impl_->sampling; }

void Head::set_sampling(const sample::SamplerParams& params) {
    auto& m = *impl_;
    std::lock_guard lock(m.call_mutex);
    sample::validate(params);
    (void)m.control(Message(to_wire(params)));
    m.sampling = params;
}

void Head::reset() {
    auto& m = *impl_;
    std::lock_guard lock(m.call_mutex);
    m.ctx->reset();
    m.has_row = false;
    // The workers' caches follow the next forward (position 0); the sampler restarts now. A failed
    // pipeline is reset locally only: reconnect() configures fresh stages and sampler.
    if (!m.broken) (void)m.control(Message(to_wire(m.sampling)));
}

void Head::decode(std::span<const int32_t> tokens, bool all_logits, std::vector<float>* logits) {
    auto& m = *impl_;
    std::lock_guard lock(m.call_mutex);
    const ForwardOutput final_output = !logits ? ForwardOutput::none
                                       : all_logits ? ForwardOutput::logits_all
                                                    : ForwardOutput::logits_last;
    const ForwardOutput part_output = logits && all_logits ? ForwardOutput::logits_all : ForwardOutput::none;
    auto replies = m.forward(tokens, final_output, part_output, 0);
    m.has_row = true;
    if (!logits) return;
    const size_t n_vocab = size_t(m.hp.n_vocab);
    logits->clear();
    for (size_t k = 0; k < replies.size(); ++k) {
        if (!all_logits && k + 1 < replies.size()) continue;
        auto* t = std::get_if<transport::Tensor>(&replies[k]);
        if (!t || t->dtype != transport::DType::f32 || t->dims.size() != 2 || t->dims[1] != n_vocab)
            fail(Status::stage_failed, "the last stage answered logits with an unexpected message or shape");
        const size_t at = logits->size();
        logits->resize(at + t->data.size() / sizeof(float));
        std::memcpy(logits->data() + at, t->data.data(), t->data.size());
    }
    const size_t want = (all_logits ? tokens.size() : 1) * n_vocab;
    if (logits->size() != want)
        fail(Status::stage_failed, "the last stage returned " + std::to_string(logits->size()) + " logits, expected " +
                                       std::to_string(want));
}

namespace {

int32_t take_sampled(Message& reply, std::vector<sample::TokenLogprob>* top) {
    auto* s = std::get_if<transport::Sampled>(&reply);
    if (!s) fail(Status::stage_failed, "the last stage answered a sample request with an unexpected message");
    if (top) {
        top->clear();
        for (const auto& t : s->top) top->push_back({t.token, t.logprob});
    }
    return s->token;
}

}  // namespace

int32_t Head::sample(uint32_t n_top, std::vector<sample::TokenLogprob>* top) {
    auto& m = *impl_;
    std::lock_guard lock(m.call_mutex);
    if (!m.has_row) fail(Status::invalid_argument, "there are no logits to sample from: decode first");
    transport::SampleRequest r;
    r.n_top = n_top;
    Message reply = m.control(Message(r));
    return take_sampled(reply, top);
}

int32_t Head::decode_and_sample(std::span<const int32_t> tokens, uint32_t n_top,
                                std::vector<sample::TokenLogprob>* top) {
    auto& m = *impl_;
    std::lock_guard lock(m.call_mutex);
    auto replies = m.forward(tokens, ForwardOutput::sample, ForwardOutput::none, n_top);
    m.has_row = true;
    return take_sampled(replies.back(), top);
}

}  // namespace strata::pipeline
