// engine.hpp: what runs the requests' sequences. Two forms share the request handling: one
// session whose slots are decoded together (BatchEngine), and one pipeline per slot
// (PipelineEngine). An engine takes jobs from the queue, drives each through a Generation and
// frees the slot when the job ends or is cancelled.
#pragma once

#include <strata/strata.h>

#include "job.hpp"
#include "metrics.hpp"

namespace server {

class Engine {
public:
    virtual ~Engine() = default;
    // Starts the engine's threads.
    virtual void start() = 0;
    // Ends every running job ("server shutting down") and joins the threads.
    virtual void stop() = 0;
    virtual EngineGauges gauges() const = 0;
};

// The log-probability of `token` under raw logits (log-softmax, temperature 1).
float token_logprob(const float* logits, int32_t n_vocab, int32_t token);

// The library's sampler settings for a request (seeded, as the request asks).
strata_sampling_params sampling_of(const JobInput& in);

// Tokens both sequences begin with.
size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

}  // namespace server
