// pipeline_engine.hpp: --worker ADDR ...: one strata pipeline per slot (each its own connection
// to every worker) and one thread per slot running that slot's sequence, so that different
// sequences occupy different stages at once. A stage failure fails the request on that slot with
// 502 naming the stage; the slot reconnects before its next request, so the server keeps serving
// once the worker is back.
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "engine.hpp"
#include "generation.hpp"
#include "job_queue.hpp"
#include "strata/strata.h"

namespace server {

class PipelineEngine : public Engine {
public:
    struct Lane {
        strata_pipeline* pipeline = nullptr;
        strata_session* session = nullptr;  // the pipeline's one sequence
    };
    // Takes the lanes (one per slot).
    PipelineEngine(std::vector<Lane> lanes, JobQueue& queue, Metrics& metrics, TokenText& text);
    ~PipelineEngine() override;

    void start() override;
    void stop() override;
    EngineGauges gauges() const override;

private:
    struct Slot {
        Lane lane;
        std::vector<int32_t> cached;  // the tokens the sequence holds
        bool broken = false;          // a stage failed: reconnect before the next request
        std::atomic<int64_t> n_past{0};
        std::atomic<bool> busy{false};
        std::thread thread;
    };
    void run(Slot& slot, size_t index);
    bool repair(Slot& slot, Generation& generation);
    void serve(Slot& slot, Generation& generation);

    std::vector<std::unique_ptr<Slot>> slots_;
    JobQueue& queue_;
    Metrics& metrics_;
    TokenText& text_;
    int32_t n_vocab_ = 0;
    int64_t n_ctx_ = 0;
    std::atomic<bool> stopping_{false};
};

}  // namespace server
