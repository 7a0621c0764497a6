// The sampling state of one sequence: a Sampler, the last decoded row of logits, and the rule
// that a sampled token enters the repetition-penalty history exactly once, whether or not it is
// decoded next. Shared by local sessions and the last stage of a pipeline so that both draw
// the same tokens from the same logits and settings.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "sample/sampler.hpp"

namespace strata::sample {

struct TokenLogprob {
    int32_t token;
    float logprob;  // log-softmax of the raw logits (temperature 1, no penalty)
};

class SequenceSampler {
public:
    explicit SequenceSampler(const SamplerParams& params);
    const SamplerParams& params() const { return sampler_.params(); }

    // Replaces the settings: history cleared, generator seeded; the kept row stays.
    void set_params(const SamplerParams& params);
    // History cleared, generator re-seeded, no row kept.
    void reset();
    // Tokens were decoded; `last_row` is the last token's logits (kept for sample()).
    void decoded(std::span<const int32_t> tokens, std::span<const float> last_row);
    // The cache was truncated: the kept row no longer belongs to the sequence.
    void forget_row() { row_.clear(); }
    bool has_row() const { return !row_.empty(); }

    // Draws from the kept row; fills `top` (if not null) with the n_top highest raw
    // log-probabilities, descending (ties: lower id first). Throws invalid_argument without a row.
    int32_t sample(uint32_t n_top = 0, std::vector<TokenLogprob>* top = nullptr);

private:
    Sampler sampler_;
    std::vector<float> row_;
    std::optional<int32_t> sampled_not_decoded_;
};

// The n highest log-softmax values of `logits`, descending (ties: lower id first).
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, uint32_t n);

}  // namespace strata::sample
