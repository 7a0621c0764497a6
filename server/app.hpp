// app.hpp: the state every request handler shares.
#pragma once

#include <atomic>

#include "auth.hpp"
#include "job_queue.hpp"
#include "metrics.hpp"
#include "model_host.hpp"
#include "options.hpp"

namespace server {

struct App {
    explicit App(const Options& o) : options(o), queue(size_t(o.queue_limit)), auth(o.api_key) {}

    const Options options;
    ModelHost host;
    JobQueue queue;
    Metrics metrics;
    ApiKeyCheck auth;
    std::atomic<int64_t> in_flight{0};  // generation requests not yet answered
    std::atomic<bool> draining{false};  // SIGTERM: new generation requests get 503
};

}  // namespace server
