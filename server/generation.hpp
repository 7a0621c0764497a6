// generation.hpp: what happens to each sampled token of one request, the same for every kind of
// engine: end-of-generation, max_tokens, stop strings, text held back until it is complete, and
// the events and outcome of the job.
#pragma once

#include <memory>

#include "job.hpp"
#include "text_stream.hpp"
#include "token_text.hpp"

namespace server {

class Generation {
public:
    Generation(std::shared_ptr<Job> job, TokenText& text);

    Job& job() { return *job_; }
    const std::shared_ptr<Job>& job_ptr() const { return job_; }

    // One sampled token; `top` holds the request's top_logprobs alternatives and `logprob` the
    // token's own log-probability (both only read when the request asked for log-probabilities).
    // False when generation is over (the job is finished).
    bool accept(int32_t token, float logprob, std::vector<std::pair<int32_t, float>> top);
    // Ends the job at the context's end (finish_reason "length").
    void finish_length();
    // Ends the job with an error response.
    void fail(int status, const std::string& message, const std::string& type = "server_error");
    int32_t generated() const { return n_generated_; }

private:
    void finish(FinishReason reason);
    std::shared_ptr<Job> job_;
    TokenText& text_;
    TextStream stream_;
    std::vector<TokenLogprob> pending_logprobs_;
    int32_t n_generated_ = 0;
};

}  // namespace server
