// strata-server: an OpenAI-compatible HTTP server over the public strata API.
//
// The listener is bound first and its port printed ("strata-server: listening on
// http://HOST:PORT"), then the model is loaded (GET /health: 503 until then, 200 after).
// SIGTERM/SIGINT: stop accepting, let in-flight requests finish for up to --drain-s, end the
// rest, exit 0.
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "app.hpp"
#include "http_server.hpp"
#include "options.hpp"
#include "routes.hpp"

namespace {

using namespace server;

// Waits until `done()` or the time is up, polling (the counters it reads are atomics).
template <typename Done>
void wait_until(Done done, std::chrono::duration<double> limit) {
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(limit);
    while (!done() && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse_options(argc, argv);
    App app(options);
    net::io_context io;
    HttpServer http_server(io, [&app](Request& r, Exchange& e) { return handle_request(app, r, e); },
                           options.max_body_bytes);
    uint16_t port = 0;
    try {
        port = http_server.listen(options.host, options.port);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strata-server: cannot listen on %s:%u: %s\n", options.host.c_str(),
                     unsigned(options.port), e.what());
        return 1;
    }
    std::printf("strata-server: listening on http://%s:%u\n", options.host.c_str(), unsigned(port));
    std::fflush(stdout);

    std::mutex stop_mutex;
    std::condition_variable stop_signalled;
    bool stop_requested = false;
    net::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const beast::error_code& ec, int) {
        if (ec) return;
        std::lock_guard lock(stop_mutex);
        stop_requested = true;
        stop_signalled.notify_all();
    });
    http_server.start();
    auto work = net::make_work_guard(io);
    std::vector<std::thread> threads;
    for (int32_t i = 0; i < options.http_threads; ++i) threads.emplace_back([&io] { io.run(); });
    auto shut_down_io = [&] {
        work.reset();
        io.stop();
        for (auto& t : threads) t.join();
    };

    try {
        app.host.load(options, app.queue, app.metrics);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strata-server: cannot load the model: %s\n", e.what());
        shut_down_io();
        return 1;
    }
    std::fprintf(stderr, "strata-server: model %s loaded: %d slot(s) of %lld tokens\n", app.host.model_id().c_str(),
                 options.parallel, static_cast<long long>(app.host.n_ctx()));

    {
        std::unique_lock lock(stop_mutex);
        stop_signalled.wait(lock, [&] { return stop_requested; });
    }
    std::fprintf(stderr, "strata-server: stopping: no new requests, %lld in flight\n",
                 static_cast<long long>(app.in_flight.load()));
    app.draining = true;
    http_server.stop_accepting();
    wait_until([&] { return app.in_flight == 0; }, std::chrono::duration<double>(options.drain_s));
    app.queue.close();
    app.host.engine().stop();  // ends what is still running ("shutting down")
    wait_until([&] { return app.in_flight == 0; }, std::chrono::seconds(2));
    shut_down_io();
    std::fprintf(stderr, "strata-server: stopped\n");
    return 0;
}
