// engine.hpp: what runs the requests' sequences. Two forms share the request handling: one
// session whose slots are decoded together (BatchEngine), and one pipeline per slot
// (PipelineEngine). An engine takes jobs from the queue, drives each through a Generation and
// frees the slot when the job ends or is cancelled.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

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

// Of the `common` tokens a slot's cache shares with a new request's prompt, those it keeps: all
// but the prompt's last token, which is decoded again so that it has logits; none with a
// repetition penalty, which reads a sampler history a kept prefix would not be part of (the
// request would then not be exactly what it is alone).
size_t reusable_prefix(size_t common, const JobInput& in);

// What a request asking for log-probabilities gets for the token sample_top drew: the
// alternatives it returned (n_top at most, a -1 token ends them) and the token's own
// log-probability, from them or, when it is not among them, from the raw logits.
struct SampledLogprobs {
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top;
};
SampledLogprobs sampled_logprobs(int32_t token, const int32_t* top_tokens, const float* top_logprobs, size_t n_top,
                                 const float* logits, int32_t n_vocab);

}  // namespace server
