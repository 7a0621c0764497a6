// engine.cpp: helpers both engines use.
#include "engine.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace server {

float token_logprob(const float* logits, int32_t n_vocab, int32_t token) {
    if (!logits || token < 0 || token >= n_vocab) return -INFINITY;
    const float top = *std::max_element(logits, logits + n_vocab);
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i] - top));
    return float(double(logits[token] - top) - std::log(sum));
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

size_t reusable_prefix(size_t common, const JobInput& in) {
    if (in.sampling.repeat_penalty != 1.0f) return 0;
    return std::min(common, in.prompt.size() - 1);
}

SampledLogprobs sampled_logprobs(int32_t token, const int32_t* top_tokens, const float* top_logprobs, size_t n_top,
                                 const float* logits, int32_t n_vocab) {
    SampledLogprobs out;
    for (size_t i = 0; i < n_top && top_tokens[i] >= 0; ++i) out.top.emplace_back(top_tokens[i], top_logprobs[i]);
    auto it = std::find_if(out.top.begin(), out.top.end(), [&](const auto& p) { return p.first == token; });
    out.logprob = it != out.top.end() ? it->second : token_logprob(logits, n_vocab, token);
    return out;
}

strata_sampling_params sampling_of(const JobInput& in) {
    strata_sampling_params p;
    strata_sampling_default_params(&p);
    p.temperature = in.sampling.temperature;
    p.top_k = in.sampling.top_k;
    p.top_p = in.sampling.top_p;
    p.min_p = in.sampling.min_p;
    p.repeat_penalty = in.sampling.repeat_penalty;
    p.repeat_last_n = in.sampling.repeat_last_n;
    p.seed = in.seed;
    return p;
}

}  // namespace server
