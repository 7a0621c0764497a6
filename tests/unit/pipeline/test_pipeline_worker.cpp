// pipeline::Worker on 127.0.0.1 in a thread of its own, driven by clients that speak the
// transport directly: the real dialer (tcp_dial, dial_handshake, send_message) in coroutines,
// and a raw POSIX socket for bytes the codec would never produce.
#include <doctest/doctest.h>

#if STRATA_TRANSPORT_HAS_TCP

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "pipeline/stage.hpp"
#include "pipeline/worker.hpp"
#include "test_exec_synth.hpp"
#include "test_support.hpp"
#include "transport/auth.hpp"
#include "transport/handshake.hpp"
#include "transport/send.hpp"
#include "transport/tcp.hpp"
#if STRATA_TRANSPORT_HAS_UCX
#include "transport/ucx/ucx.hpp"
#endif
#include "util/error.hpp"

using namespace strata::transport;
namespace pipeline = strata::pipeline;
namespace gguf = strata::gguf;
namespace test = strata::test;
using LibStatus = strata::Status;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr int kLayers = 5;
constexpr uint64_t kBudget = uint64_t(1) << 34;
constexpr uint8_t kModelByte = 0xab;  // the identity the worker is told its model has
const std::string kKey = "pipeline secret";

std::shared_ptr<const gguf::ModelFile> synth_model() {
    static std::shared_ptr<const gguf::ModelFile> model = [] {
        test::SynthSpec s;
        s.n_layer = kLayers;
        s.n_vocab = 96;
        return std::shared_ptr<const gguf::ModelFile>(test::make_model(s, test::test_seed()));
    }();
    return model;
}

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

pipeline::WorkerOptions worker_options() {
    pipeline::WorkerOptions o;
    o.listen = {"127.0.0.1", 0};
    o.key = bytes_of(kKey);
    o.stage.n_threads = 2;
    o.stage.memory_budget = kBudget;
    o.heartbeat = 200ms;
    o.peer_timeout = 5000ms;  // generous: the test machine is shared; the silence test lowers it
    o.handshake_timeout = 5000ms;
    for (int i = 0; i < 32; ++i) o.model_identity += "ab";  // kModelByte, 32 times
    return o;
}

// A worker serving in its own thread; its log lines are kept for the checks.
class RunningWorker {
public:
    explicit RunningWorker(pipeline::WorkerOptions o = worker_options()) {
        o.log = [this](const std::string& line) {
            std::lock_guard lock(mutex_);
            if (std::getenv("STRATA_TEST_VERBOSE")) std::fprintf(stderr, "worker: %s\n", line.c_str());
            lines_.push_back(line);
            changed_.notify_all();
        };
        worker_ = std::make_unique<pipeline::Worker>(synth_model(), o);
        worker_->bind();
        done_ = std::async(std::launch::async, [this] { worker_->run(); });
    }
    ~RunningWorker() {
        worker_->stop();
        done_.wait();
    }
    uint16_t port() const { return worker_->port(); }
    void stop() { worker_->stop(); }
    bool returns_within(std::chrono::milliseconds t) { return done_.wait_for(t) == std::future_status::ready; }

    // Waits until a log line contains every one of `parts`; returns it ("" on timeout).
    std::string wait_for_log(std::vector<std::string> parts, std::chrono::milliseconds timeout = 10000ms) {
        std::unique_lock lock(mutex_);
        std::string found;
        changed_.wait_for(lock, timeout, [&] {
            for (const auto& line : lines_) {
                bool all = true;
                for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
                if (all) {
                    found = line;
                    return true;
                }
            }
            return false;
        });
        return found;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::string> lines_;
    std::unique_ptr<pipeline::Worker> worker_;
    std::future<void> done_;
};

Hello dialer_hello(uint32_t begin = 0, uint32_t end = 0, uint8_t model_byte = kModelByte) {
    Hello h;
    h.model_id.fill(model_byte);
    h.layer_begin = begin;
    h.layer_end = end;
    h.kv_type = 0;
    h.context_length = 32;
    return h;
}

// The head's side through the real transport, one blocking call at a time.
class Client {
public:
    // Runs one coroutine made by `make` to completion on this client's io_context.
    template <typename T>
    T sync(std::function<Task<T>()> make) {
        std::optional<T> out;
        std::exception_ptr error;
        asio::co_spawn(
            io_,
            [&]() -> Task<void> {
                auto task = make();
                T r = co_await std::move(task);
                out.emplace(std::move(r));
            },
            [&](std::exception_ptr e) {
                error = e;
                io_.stop();  // an rdma connection's pump would keep run() going
            });
        io_.run();
        io_.restart();
        if (error) std::rethrow_exception(error);
        return std::move(*out);
    }

    Status connect(uint16_t port) {
        auto r = sync<Result<std::unique_ptr<TcpConnection>>>(
            [&] { return tcp_dial(io_.get_executor(), Endpoint{"127.0.0.1", port}, TcpOptions{}, Timeout{5000}); });
        if (!r) return r.error();
        conn_ = std::move(r.value());
        return Ok{};
    }

#if STRATA_TRANSPORT_HAS_UCX
    // The same head side over the rdma transport (UCX).
    Status connect_rdma(uint16_t port) {
        if (!ucx_) {
            auto made = UcxContext::make({});
            if (!made) return made.error();
            ucx_ = made.value();
        }
        auto r = sync<Result<std::unique_ptr<UcxConnection>>>(
            [&] { return ucx_dial(io_.get_executor(), Endpoint{"127.0.0.1", port}, ucx_, Timeout{5000}); });
        if (!r) return r.error();
        conn_ = std::move(r.value());
        return Ok{};
    }

    // Bytes as they are, for frames the codec would never produce.
    Status send_raw(const std::vector<uint8_t>& bytes) {
        auto* ucx = dynamic_cast<UcxConnection*>(conn_.get());
        REQUIRE(ucx != nullptr);
        return sync<Status>([&]() -> Task<Status> {
            const std::span<const uint8_t> part(bytes);
            Status st = co_await ucx->send_raw(std::span(&part, 1), Timeout{5000});
            co_return st;
        });
    }
#endif

    Result<Hello> handshake(const std::string& key, Hello hello = dialer_hello()) {
        HandshakeConfig config;
        config.local = hello;
        config.key = bytes_of(key);
        config.timeout = Timeout{5000};
        return sync<Result<Hello>>([&] { return dial_handshake(*conn_, config); });
    }

    // Connected and past the handshake (fails the test otherwise).
    void open(uint16_t port, Hello hello = dialer_hello()) {
        REQUIRE(connect(port).ok());
        auto h = handshake(kKey, hello);
        REQUIRE_MESSAGE(h.ok(), (h.ok() ? std::string() : h.error().detail));
    }

    Status send(const Message& m) {
        return sync<Status>([&]() -> Task<Status> {
            Status st = co_await send_message(*conn_, m, Timeout{5000});
            co_return st;
        });
    }

    // The next message that is not a heartbeat.
    Result<Message> receive(Timeout timeout = Timeout{10000}) {
        return sync<Result<Message>>([&]() -> Task<Result<Message>> {
            for (;;) {
                Result<Frame> f = co_await conn_->receive_frame(timeout);
                if (!f) co_return f.error();
                Result<Message> m = from_frame(f.value());
                if (!m || !std::holds_alternative<Heartbeat>(m.value())) co_return m;
            }
        });
    }

    Result<Message> request(const Message& m) {
        Status sent = send(m);
        if (!sent) return sent.error();
        return receive();
    }

    LinkConnection& conn() { return *conn_; }

private:
    asio::io_context io_;
#if STRATA_TRANSPORT_HAS_UCX
    std::shared_ptr<UcxContext> ucx_;
#endif
    std::unique_ptr<LinkConnection> conn_;
};

// A blocking POSIX socket: for bytes no encoder would produce.
class RawClient {
public:
    explicit RawClient(uint16_t port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd_ >= 0);
        timeval tv{10, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    }
    ~RawClient() { ::close(fd_); }

    void write(const std::vector<uint8_t>& bytes) {
        REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size()));
    }
    void send(const Message& m) { write(encode_frame(to_frame(m).value())); }

    // The next message that is not a heartbeat; `closed` at end of stream.
    Result<Message> receive() {
        for (;;) {
            std::span<const uint8_t> in(pending_.data() + used_, pending_.size() - used_);
            auto r = decoder_.next(in);
            used_ = pending_.size() - in.size();
            if (!r) return r.error();
            if (r.value()) {
                auto m = from_frame(*r.value());
                if (!m || !std::holds_alternative<Heartbeat>(m.value())) return m;
                continue;
            }
            uint8_t buffer[4096];
            const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
            if (n == 0) return make_error(Errc::closed, "end of stream");
            if (n < 0) return make_error(Errc::io, std::strerror(errno));
            pending_.assign(pending_.begin() + ptrdiff_t(used_), pending_.end());
            pending_.insert(pending_.end(), buffer, buffer + n);
            used_ = 0;
        }
    }

    // The dialer's side of the handshake, written out by hand.
    void handshake(const std::string& key) {
        send(dialer_hello());
        auto ack = receive();
        REQUIRE(ack.ok());
        REQUIRE(std::holds_alternative<HelloAck>(ack.value()));
        const auto k = bytes_of(key);
        send(AuthResponse{auth_mac(k, Role::dialer, std::get<HelloAck>(ack.value()).nonce).value()});
        auto proof = receive();
        REQUIRE(proof.ok());
        REQUIRE(std::holds_alternative<AuthResponse>(proof.value()));
    }

private:
    int fd_ = -1;
    FrameDecoder decoder_;
    std::vector<uint8_t> pending_;
    size_t used_ = 0;
};

StageConfigure configure_msg(uint32_t begin, uint32_t end) { return {begin, end, 0, 32, 8}; }

Forward forward_msg(uint64_t position, ForwardOutput output, std::vector<int32_t> tokens, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const auto h = test::synth_normal(rng, tokens.size() * 256, 1.0);
    Forward f;
    f.position = position;
    f.output = output;
    f.tokens = std::move(tokens);
    f.hidden.dtype = DType::f32;
    f.hidden.dims = {f.tokens.size(), 256};
    f.hidden.data.resize(h.size() * 4);
    std::memcpy(f.hidden.data.data(), h.data(), f.hidden.data.size());
    return f;
}

uint32_t library_code(LibStatus s) { return kLibraryStatusBase + uint32_t(s); }

// The answer, which must be a T (an error frame or a failed receive fails the test).
template <typename T>
T as(const Result<Message>& r) {
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().detail));
    if (auto* e = std::get_if<ErrorMessage>(&r.value())) FAIL("error frame: " << e->code << " " << e->message);
    REQUIRE(std::holds_alternative<T>(r.value()));
    return std::get<T>(r.value());
}

ErrorMessage error_of(const Result<Message>& r) {
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().detail));
    REQUIRE(std::holds_alternative<ErrorMessage>(r.value()));
    return std::get<ErrorMessage>(r.value());
}

}  // namespace

TEST_CASE("worker: a head with the key and the model's identity shakes hands; the wrong key or model is refused") {
    RunningWorker worker;
    {
        Client c;
        REQUIRE(c.connect(worker.port()).ok());
        auto h = c.handshake(kKey);
        REQUIRE(h.ok());
        CHECK(h.value().model_id == dialer_hello().model_id);
        CHECK(h.value().layer_begin == 0);
        CHECK(h.value().layer_end == 0);
        CHECK(h.value().context_length == 32);
        CHECK_FALSE(worker.wait_for_log({"handshake with", "ok"}).empty());
    }
    {
        Client c;
        REQUIRE(c.connect(worker.port()).ok());
        auto h = c.handshake("another secret");
        REQUIRE_FALSE(h.ok());
        CHECK(h.error().code == Errc::auth_failed);
        CHECK_FALSE(worker.wait_for_log({"refused", "auth_failed"}).empty());
    }
    {
        Client c;
        REQUIRE(c.connect(worker.port()).ok());
        auto h = c.handshake(kKey, dialer_hello(0, 0, 0x42));
        REQUIRE_FALSE(h.ok());
        CHECK(h.error().code == Errc::identity_mismatch);
        CHECK_FALSE(worker.wait_for_log({"refused", "identity_mismatch"}).empty());
    }
}

TEST_CASE("worker: a fixed range accepts that range or [0,0) and refuses others, naming both ranges") {
    auto o = worker_options();
    o.fixed_layer_begin = 2;
    o.fixed_layer_end = 4;
    RunningWorker worker(o);
    {
        Client c;
        REQUIRE(c.connect(worker.port()).ok());
        auto h = c.handshake(kKey, dialer_hello(1, 3));
        REQUIRE_FALSE(h.ok());
        CHECK(h.error().code == Errc::identity_mismatch);
        CHECK(h.error().detail.find("[1, 3)") != std::string::npos);
        CHECK(h.error().detail.find("[2, 4)") != std::string::npos);
    }
    Client planning;  // [0, 0): the head plans from memory; the reply names the fixed range
    REQUIRE(planning.connect(worker.port()).ok());
    auto h = planning.handshake(kKey, dialer_hello(0, 0));
    REQUIRE(h.ok());
    CHECK(h.value().layer_begin == 2);
    CHECK(h.value().layer_end == 4);
    const auto& info = as<StageInfo>(planning.request(StageQuery{}));
    CHECK(info.fixed_layer_begin == 2);
    CHECK(info.fixed_layer_end == 4);
    // Configuring another range is refused, the connection kept.
    const auto& e = error_of(planning.request(configure_msg(1, 4)));
    CHECK(e.code == library_code(LibStatus::invalid_argument));
    CHECK(e.message.find("[2, 4)") != std::string::npos);
    CHECK(e.message.find("[1, 4)") != std::string::npos);
    as<StageReady>(planning.request(configure_msg(2, 4)));

    Client exact;
    exact.open(worker.port(), dialer_hello(2, 4));
}

TEST_CASE("worker: query, configure, forward and sampling answer what a local Stage answers") {
    RunningWorker worker;
    Client c;
    c.open(worker.port());
    const auto& info = as<StageInfo>(c.request(StageQuery{}));
    CHECK(info.n_layers == kLayers);
    CHECK(info.n_threads == 2);
    CHECK(info.available_memory == kBudget);
    CHECK(info.backend == "cpu");
    CHECK_FALSE(info.host.empty());
    CHECK(info.fixed_layer_end == 0);

    pipeline::StageOptions stage_options;
    stage_options.n_threads = 2;
    stage_options.memory_budget = kBudget;
    pipeline::Stage local(*synth_model(), configure_msg(2, kLayers), stage_options);
    const auto& ready = as<StageReady>(c.request(configure_msg(2, kLayers)));
    CHECK(ready == local.ready());
    CHECK_FALSE(worker.wait_for_log({"configured", "layers [2, 5)", "total"}).empty());

    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    const Forward prefill = forward_msg(0, ForwardOutput::logits_all, {1, 2, 3, 4, 5}, seed);
    const auto want = std::get<Tensor>(local.forward(prefill));
    CHECK(as<Tensor>(c.request(prefill)) == want);

    SetSampling s;
    s.temperature = 0.8f;
    s.top_k = 30;
    s.seed = seed;
    as<Done>(c.request(s));
    local.set_sampling(s);
    for (uint64_t step = 0; step < 4; ++step) {
        Forward f = forward_msg(5 + step, ForwardOutput::sample, {int32_t(step)}, seed + step);
        f.n_top = 4;
        const auto local_sampled = std::get<Sampled>(local.forward(f));
        CHECK(as<Sampled>(c.request(f)) == local_sampled);
    }
    Forward keep = forward_msg(9, ForwardOutput::none, {7}, seed + 9);
    (void)local.forward(keep);
    as<Done>(c.request(keep));
    CHECK(as<Sampled>(c.request(SampleRequest{3})) == local.sample(3));

    // A refused request keeps the connection: the stage answers the next one.
    const auto& e = error_of(c.request(forward_msg(50, ForwardOutput::logits_last, {1}, seed)));
    CHECK(e.code == library_code(LibStatus::invalid_argument));
    CHECK(e.message.find("out of order") != std::string::npos);
    const auto& overflow = error_of(c.request(forward_msg(10, ForwardOutput::logits_last, std::vector<int32_t>(30, 1), seed)));
    CHECK(overflow.code == library_code(LibStatus::context_overflow));
    as<StageInfo>(c.request(StageQuery{}));
}

TEST_CASE("worker: a stage request before stage_configure is refused and the connection closed") {
    RunningWorker worker;
    Client c;
    c.open(worker.port());
    const auto& e = error_of(c.request(forward_msg(0, ForwardOutput::hidden, {1}, 1)));
    CHECK(e.code == uint32_t(Errc::unexpected_message));
    auto next = c.receive();
    REQUIRE_FALSE(next.ok());
    CHECK(next.error().code == Errc::closed);
    CHECK_FALSE(worker.wait_for_log({"closing", "before stage_configure"}).empty());
}

TEST_CASE("worker: a frame with a bad checksum closes that connection only") {
    RunningWorker worker;
    Client other;
    other.open(worker.port());
    as<StageReady>(other.request(configure_msg(1, 3)));

    RawClient raw(worker.port());
    raw.handshake(kKey);
    auto wire = encode_frame(to_frame(Message(configure_msg(1, 3))).value());
    wire.back() ^= 0x40;  // the payload no longer matches the header's CRC32C
    raw.write(wire);
    // Whatever arrives first (an error frame, if the worker could still send one), the stream ends.
    Result<Message> r = raw.receive();
    while (r.ok()) r = raw.receive();
    CHECK(r.error().code == Errc::closed);
    CHECK_FALSE(worker.wait_for_log({"closing", "checksum"}).empty());

    const auto& info = as<StageInfo>(other.request(StageQuery{}));
    CHECK(info.n_layers == kLayers);
    Forward f = forward_msg(0, ForwardOutput::hidden, {3}, 5);
    CHECK(as<Tensor>(other.request(f)).dims == std::vector<uint64_t>{1, 256});
}

TEST_CASE("worker: a silent head is dropped after peer_timeout and its sequence freed") {
    auto o = worker_options();
    o.heartbeat = 200ms;
    o.peer_timeout = 800ms;
    RunningWorker worker(o);
    Client c;
    c.open(worker.port());
    as<StageReady>(c.request(configure_msg(3, kLayers)));
    const auto start = std::chrono::steady_clock::now();
    // Heartbeats keep coming from the worker until it gives up on this silent head.
    auto r = c.receive(Timeout{10000});
    while (r.ok()) r = c.receive(Timeout{10000});
    CHECK(r.error().code == Errc::closed);
    CHECK(std::chrono::steady_clock::now() - start >= 700ms);
    CHECK_FALSE(worker.wait_for_log({"closing", "silent for more than 800 ms", "sequence freed"}).empty());
}

TEST_CASE("worker: heartbeats from the head keep an idle connection alive past peer_timeout") {
    auto o = worker_options();
    o.peer_timeout = 800ms;
    RunningWorker worker(o);
    Client c;
    c.open(worker.port());
    const Message beat = Heartbeat{};
    for (int i = 0; i < 8; ++i) {
        std::this_thread::sleep_for(200ms);
        REQUIRE(c.send(beat).ok());
    }
    as<StageInfo>(c.request(StageQuery{}));
}

TEST_CASE("worker: stop() makes run() return, with heads connected") {
    RunningWorker worker;
    Client c;
    c.open(worker.port());
    as<StageReady>(c.request(configure_msg(1, 2)));
    worker.stop();
    CHECK(worker.returns_within(5000ms));
    CHECK_FALSE(worker.wait_for_log({"closing", "stopping"}).empty());
}

TEST_CASE("worker: options it cannot serve are refused") {
    auto o = worker_options();
    o.fixed_layer_begin = 0;
    o.fixed_layer_end = 3;
    CHECK_THROWS_AS(pipeline::Worker(synth_model(), o), strata::Error);
    o.fixed_layer_begin = 2;
    o.fixed_layer_end = kLayers + 1;
    CHECK_THROWS_AS(pipeline::Worker(synth_model(), o), strata::Error);
    o = worker_options();
    o.model_identity = "xyz";
    CHECK_THROWS_AS(pipeline::Worker(synth_model(), o), strata::Error);

    // No key on a non-loopback address needs allow_no_key.
    o = worker_options();
    o.key.clear();
    o.listen = {"0.0.0.0", 0};
    pipeline::Worker open(synth_model(), o);
    try {
        open.bind();
        FAIL("bind() accepted no key on 0.0.0.0");
    } catch (const strata::Error& e) {
        CHECK(e.status() == LibStatus::invalid_argument);
        CHECK(std::string(e.what()).find("without a key") != std::string::npos);
    }
    o.allow_no_key = true;
    pipeline::Worker allowed(synth_model(), o);
    CHECK_NOTHROW(allowed.bind());
    o = worker_options();
    o.key.clear();
    pipeline::Worker loopback(synth_model(), o);
    CHECK_NOTHROW(loopback.bind());
}

#endif  // STRATA_TRANSPORT_HAS_TCP

#if STRATA_TRANSPORT_HAS_TCP && STRATA_TRANSPORT_HAS_UCX
// The worker over rdma (UCX: here over its TCP transport): the same handshake, refusals,
// stage answers and bad-frame handling as over tcp.
TEST_CASE("worker over rdma: handshake and refusals, stage answers, a bad checksum closes that connection only") {
    pipeline::WorkerOptions o = worker_options();
    o.transport = LinkKind::rdma;
    RunningWorker worker(o);
    CHECK_FALSE(worker.wait_for_log({"over rdma"}).empty());
    {
        Client tcp;  // a tcp head gets nowhere: the port is UCX's
        const Status st = tcp.connect(worker.port());
        if (st.ok()) CHECK_FALSE(tcp.handshake(kKey).ok());
    }
    {
        Client c;
        REQUIRE(c.connect_rdma(worker.port()).ok());
        auto h = c.handshake("another secret");
        REQUIRE_FALSE(h.ok());
        CHECK(h.error().code == Errc::auth_failed);
        CHECK_FALSE(worker.wait_for_log({"refused", "auth_failed"}).empty());
    }
    {
        Client c;
        REQUIRE(c.connect_rdma(worker.port()).ok());
        auto h = c.handshake(kKey, dialer_hello(0, 0, 0x42));
        REQUIRE_FALSE(h.ok());
        CHECK(h.error().code == Errc::identity_mismatch);
    }
    Client other;
    REQUIRE(other.connect_rdma(worker.port()).ok());
    auto h = other.handshake(kKey);
    REQUIRE_MESSAGE(h.ok(), (h.ok() ? std::string() : h.error().detail));
    as<StageReady>(other.request(configure_msg(1, 3)));
    CHECK(std::string(other.conn().kind()) == "rdma");

    Client bad;
    REQUIRE(bad.connect_rdma(worker.port()).ok());
    REQUIRE(bad.handshake(kKey).ok());
    auto wire = encode_frame(to_frame(Message(configure_msg(1, 3))).value());
    wire.back() ^= 0x40;  // the payload no longer matches the header's CRC32C
    REQUIRE(bad.send_raw(wire).ok());
    Result<Message> r = bad.receive();
    while (r.ok()) r = bad.receive();
    CHECK((r.error().code == Errc::closed || r.error().code == Errc::timed_out));
    CHECK_FALSE(worker.wait_for_log({"closing", "checksum"}).empty());

    const auto& info = as<StageInfo>(other.request(StageQuery{}));
    CHECK(info.n_layers == kLayers);
    Forward f = forward_msg(0, ForwardOutput::hidden, {3}, 5);
    CHECK(as<Tensor>(other.request(f)).dims == std::vector<uint64_t>{1, 256});
}
#endif
