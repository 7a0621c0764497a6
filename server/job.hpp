// job.hpp: one generation request between the HTTP side and the engine. The HTTP side fills
// the input and waits; the engine appends output events and finishes it, from its own thread;
// either side may cancel (client gone, deadline, shutdown). Everything after construction is
// thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "openai_request.hpp"

namespace server {

using Clock = std::chrono::steady_clock;

struct TokenLogprob {
    int32_t token = 0;
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top;  // the most likely tokens, descending
};

// Text that became ready, with the tokens that completed it.
struct JobEvent {
    std::string text;
    std::vector<TokenLogprob> logprobs;  // when asked for
};

enum class FinishReason { stop, length };

struct JobOutcome {
    bool ok = true;
    FinishReason reason = FinishReason::stop;
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    // When !ok: the HTTP status and message (502 naming a failed stage, 504 past the deadline, ...).
    int error_status = 0;
    std::string error_message;
    std::string error_type;
};

struct JobInput {
    std::vector<int32_t> prompt;  // tokenized, fits the context with max_tokens
    int32_t max_tokens = 16;
    std::vector<std::string> stop;
    SamplingSettings sampling;    // seed resolved (a fresh one when the request gave none)
    uint64_t seed = 0;
    bool logprobs = false;
    int32_t top_logprobs = 0;
    Clock::time_point deadline = Clock::time_point::max();
};

class Job {
public:
    explicit Job(JobInput in) : input(std::move(in)) {}
    const JobInput input;

    // --- control ---
    enum class Cancel { none, client_gone, deadline, shutdown };
    void cancel(Cancel why);
    bool cancelled() const { return cancel_.load() != Cancel::none; }
    Cancel cancel_reason() const { return cancel_.load(); }

    // --- the engine's side ---
    void emit(std::string text, std::vector<TokenLogprob> logprobs);
    void finish(JobOutcome outcome);
    bool finished() const;

    // --- the waiting side ---
    // Called (from any thread) after each emit, finish or cancel: it must only schedule a wake-up.
    void set_notifier(std::function<void()> notify);
    struct Drained {
        std::vector<JobEvent> events;
        std::optional<JobOutcome> outcome;  // set once, with the last events
    };
    Drained drain();

    Clock::time_point created = Clock::now();
    std::atomic<bool> started{false};  // in a slot

private:
    void notify();
    std::atomic<Cancel> cancel_{Cancel::none};
    mutable std::mutex mutex_;
    std::vector<JobEvent> events_;
    std::optional<JobOutcome> outcome_;
    bool outcome_taken_ = false;
    std::function<void()> notify_;
};

}  // namespace server
