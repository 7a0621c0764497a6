// Token sampling from one row of logits: repetition penalty, top-k, top-p, min-p,
// temperature, then one draw from a seeded, platform-independent generator.
//
// The chain, in this order (llama.cpp's common default order):
//   1. repetition penalty  over the distinct tokens among the last `repeat_last_n` of the
//                          history: a logit > 0 is divided by `repeat_penalty`, a logit
//                          <= 0 multiplied by it (once per distinct token, not per repeat).
//   2. greedy              if temperature == 0: the argmax (lowest index on ties); stop.
//   3. top-k               keep the k highest logits (ties broken by lower token id); 0 = off.
//   4. top-p               softmax of the survivors (temperature 1); keep the smallest
//                          prefix, in descending probability, whose mass is >= top_p; 1 = off.
//                          (The normalizer is summed in ascending id order; without top-k
//                          only as much of the vocabulary is sorted as the prefix needs.)
//   5. min-p               keep tokens with p >= min_p * p_max, i.e. exp(l - l_max) >= min_p;
//                          0 = off. Always keeps the most likely token.
//   6. temperature         softmax of the survivors' logits / temperature (float64, max
//                          subtracted).
//   7. draw                u = top 24 bits of one xoshiro256** word / 2^24; the first
//                          candidate (descending logit, then ascending id) whose cumulative
//                          probability exceeds u.
// Steps 3-5 see untempered probabilities, as in llama.cpp; temperature only reshapes the
// distribution among the survivors. Every sample() call with temperature > 0 consumes
// exactly one 64-bit word from the generator; greedy calls consume none.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "sample/rng.hpp"

namespace strata::sample {

struct SamplerParams {
    float temperature = 0.8f;    // 0 = greedy; must be >= 0 and not NaN
    int32_t top_k = 40;          // 0 = disabled
    float top_p = 0.95f;         // in (0, 1]; 1 = disabled
    float min_p = 0.05f;         // in [0, 1]; 0 = disabled
    float repeat_penalty = 1.0f; // > 0; 1 = disabled
    int32_t repeat_last_n = 64;  // >= 0; 0 = disabled
    uint64_t seed = 0;

    // "temperature=0.8 top_k=40 ..." with every setting; floats in shortest round-trip form.
    std::string describe() const;
    // {"temperature":0.8,"top_k":40,...,"seed":0}: every setting, floats in shortest
    // round-trip form (NaN and infinities as the strings "NaN", "Infinity", "-Infinity").
    std::string to_json() const;
};

// Throws strata::Error(invalid_argument) naming the first offending setting.
void validate(const SamplerParams& params);

// One candidate of the final distribution (after the whole chain but the draw).
struct TokenProb {
    int32_t token;
    double probability;
};

class Sampler {
public:
    explicit Sampler(const SamplerParams& params);  // validates

    const SamplerParams& params() const { return params_; }

    // Samples one token and appends it to the history. Throws invalid_argument on empty
    // logits, more than INT32_MAX of them, a non-finite value (naming its index), or, when
    // the penalty is active (repeat_penalty != 1), a history token outside [0, logits.size()).
    int32_t sample(std::span<const float> logits);

    // The distribution sample() would draw from now, in draw order (descending logit, then
    // ascending id), probabilities summing to 1. Changes neither history nor generator.
    // With temperature 0 it is the single greedy token with probability 1.
    std::vector<TokenProb> distribution(std::span<const float> logits) const;

    // Adds a token (e.g. of the prompt) to the penalty history. Throws on a negative id.
    void accept(int32_t token);

    // Clears the history and re-seeds the generator from params().seed.
    void reset();

    // The last at most repeat_last_n tokens, oldest first.
    const std::deque<int32_t>& history() const { return history_; }

private:
    SamplerParams params_;
    Rng rng_;
    std::deque<int32_t> history_;
};

}  // namespace strata::sample
