// batch_engine.hpp: --parallel N slots on one local session made with n_seq = N, and one compute
// thread running continuous batching: every step takes, for each busy slot, either its next
// prompt chunk or its last sampled token, runs them all in one strata_session_decode_batch, and
// samples each slot whose prompt is done with that slot's own sampler.
#pragma once

#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "engine.hpp"
#include "generation.hpp"
#include "job_queue.hpp"
#include "strata/strata.h"

namespace server {

class BatchEngine : public Engine {
public:
    // Takes the session (n_seq slots); prefill_chunk caps the prompt tokens of one step, all
    // slots together, so that the decode steps of the others are not held up by new prompts.
    BatchEngine(strata_session* session, JobQueue& queue, Metrics& metrics, TokenText& text, int32_t prefill_chunk);
    ~BatchEngine() override;

    void start() override;
    void stop() override;
    EngineGauges gauges() const override;

private:
    struct Slot {
        std::optional<Generation> generation;  // the request in the slot, when busy
        std::vector<int32_t> cached;           // the tokens the slot's cache holds, in order
        size_t prompt_done = 0;                // prompt tokens already in the cache
        int32_t next_token = -1;               // sampled, to be decoded next step
    };

    void run();
    void assign_waiting_jobs();
    void assign(std::shared_ptr<Job> job);
    void drop_cancelled();
    void step();
    void sample(int32_t seq);
    void release(int32_t seq);
    void publish_gauges();

    strata_session* session_;
    JobQueue& queue_;
    Metrics& metrics_;
    TokenText& text_;
    int32_t prefill_chunk_;
    int32_t prefill_turn_ = 0;  // the slot whose prompt is served first in the next step
    int32_t n_seq_ = 1;
    int32_t n_vocab_ = 0;
    int64_t n_ctx_ = 0;
    std::vector<Slot> slots_;
    std::thread thread_;
    std::atomic<bool> stopping_{false};
    std::atomic<int64_t> active_{0};
    std::atomic<int64_t> kv_used_{0};
};

}  // namespace server
