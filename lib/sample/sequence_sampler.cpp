#include "sample/sequence_sampler.hpp"

#include <algorithm>
#include <cmath>

#include "util/error.hpp"

namespace strata::sample {

SequenceSampler::SequenceSampler(const SamplerParams& params) : sampler_(params) {}

void SequenceSampler::set_params(const SamplerParams& params) {
    sampler_ = Sampler(params);  // validates before anything changes; the kept row stays usable
    sampled_not_decoded_.reset();
}

void SequenceSampler::reset() {
    sampler_.reset();
    row_.clear();
    sampled_not_decoded_.reset();
}

void SequenceSampler::decoded(std::span<const int32_t> tokens, std::span<const float> last_row) {
    for (size_t i = 0; i < tokens.size(); ++i) {
        // The token sample() drew is already in the history: decoding it next must not add it twice.
        if (i == 0 && sampled_not_decoded_ == tokens[0]) continue;
        sampler_.accept(tokens[i]);
    }
    sampled_not_decoded_.reset();
    row_.assign(last_row.begin(), last_row.end());
}

int32_t SequenceSampler::sample(uint32_t n_top, std::vector<TokenLogprob>* top) {
    if (row_.empty()) fail(Status::invalid_argument, "there are no logits to sample from: decode first");
    if (top) *top = top_logprobs(row_, n_top);
    const int32_t token = sampler_.sample(row_);
    sampled_not_decoded_ = token;
    return token;
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, uint32_t n) {
    if (logits.empty()) return {};
    // log-softmax: l - (max + log(sum(exp(l - max)))), summed in double in index order.
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(double(l) - double(max));
    const double log_norm = double(max) + std::log(sum);

    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    const size_t k = std::min<size_t>(n, ids.size());
    std::partial_sort(ids.begin(), ids.begin() + ptrdiff_t(k), ids.end(), [&](int32_t a, int32_t b) {
        return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
    });
    std::vector<TokenLogprob> out(k);
    for (size_t i = 0; i < k; ++i) out[i] = {ids[i], float(double(logits[size_t(ids[i])]) - log_norm)};
    return out;
}

}  // namespace strata::sample
