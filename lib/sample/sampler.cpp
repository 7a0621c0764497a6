#include "sample/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/error.hpp"

namespace strata::sample {
namespace {

struct Candidate {
    int32_t id;
    float logit;
};

// A strict total order (logits are finite): descending logit, then ascending id. Sorting by
// it gives one result whatever the algorithm, so the draw order is the same everywhere.
bool before(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

void check_logits(std::span<const float> logits) {
    if (logits.empty()) fail(Status::invalid_argument, "sampler: no logits");
    if (logits.size() > size_t(std::numeric_limits<int32_t>::max()))
        fail(Status::invalid_argument, "sampler: " + std::to_string(logits.size()) + " logits exceed INT32_MAX tokens");
    for (size_t i = 0; i < logits.size(); ++i)
        if (!std::isfinite(logits[i]))
            fail(Status::invalid_argument, "sampler: logit " + std::to_string(i) + " of " +
                                               std::to_string(logits.size()) + " is not finite (" +
                                               std::to_string(logits[i]) + ")");
}

// Step 1: llama.cpp's repetition penalty, once per distinct token of the history.
std::vector<Candidate> penalized(std::span<const float> logits, const std::deque<int32_t>& history,
                                 float penalty) {
    std::vector<Candidate> c(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) c[i] = {int32_t(i), logits[i]};
    if (penalty == 1.0f || history.empty()) return c;
    std::vector<int32_t> distinct(history.begin(), history.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (int32_t id : distinct) {
        if (size_t(id) >= c.size())
            fail(Status::invalid_argument, "sampler: history token " + std::to_string(id) +
                                               " is outside the vocabulary of " + std::to_string(c.size()) +
                                               " logits");
        float& l = c[size_t(id)].logit;
        l = l > 0.0f ? l / penalty : l * penalty;
    }
    return c;
}

// Candidates in draw order with unnormalized float64 weights (the whole chain but the draw).
struct Weighted {
    std::vector<Candidate> candidates;
    std::vector<double> weights;
    double total = 0.0;
};

Weighted run_chain(std::span<const float> logits, const std::deque<int32_t>& history, const SamplerParams& p) {
    check_logits(logits);
    std::vector<Candidate> c = penalized(logits, history, p.repeat_penalty);

    // Step 2: greedy.
    if (p.temperature == 0.0f) {
        Candidate best = c[0];
        for (const auto& x : c)
            if (x.logit > best.logit) best = x;  // strict: the lowest id wins ties
        return {{best}, {1.0}, 1.0};
    }

    // Step 3: top-k. Without it the candidates stay in id order until a later step needs
    // the draw order, so that a large vocabulary is sorted only as far as necessary.
    bool sorted = false;
    if (p.top_k > 0 && size_t(p.top_k) < c.size()) {
        std::partial_sort(c.begin(), c.begin() + p.top_k, c.end(), before);
        c.resize(size_t(p.top_k));
        sorted = true;
    }
    double max_logit = c[0].logit;
    for (const auto& x : c) max_logit = std::max(max_logit, double(x.logit));

    // Step 4: top-p on the untempered softmax of the survivors.
    if (p.top_p < 1.0f) {
        std::vector<Candidate> by_id;  // the normalizer is summed in id order whatever the path
        const std::vector<Candidate>& ids = sorted ? by_id : c;
        if (sorted) {
            by_id = c;
            std::sort(by_id.begin(), by_id.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
        }
        double z = 0.0;
        for (const auto& x : ids) z += std::exp(double(x.logit) - max_logit);
        const double target = double(p.top_p) * z;
        // Sort a growing prefix until it holds the mass; partial_sort under a total order gives
        // the same prefix as a full sort.
        size_t keep = c.size();
        for (size_t m = std::min(c.size(), size_t(1024));; m = std::min(c.size(), m * 16)) {
            if (!sorted) std::partial_sort(c.begin(), c.begin() + std::ptrdiff_t(m), c.end(), before);
            double cum = 0.0;
            size_t i = 0;
            while (i < m && cum < target) cum += std::exp(double(c[i++].logit) - max_logit);
            if (cum >= target) {
                keep = i;
                break;
            }
            if (sorted || m == c.size()) break;  // rounding left the whole mass short of target
        }
        c.resize(keep);
        sorted = true;
    }

    // Step 5: min-p, relative to the most likely token, which always stays.
    if (p.min_p > 0.0f) {
        auto below = [&](const Candidate& x) { return std::exp(double(x.logit) - max_logit) < double(p.min_p); };
        if (sorted) {
            size_t keep = 1;
            while (keep < c.size() && !below(c[keep])) ++keep;
            c.resize(keep);
        } else {
            c.erase(std::remove_if(c.begin(), c.end(), below), c.end());
        }
    }
    if (!sorted) std::sort(c.begin(), c.end(), before);

    // Step 6: temperature.
    Weighted w;
    w.weights.resize(c.size());
    const double inv_t = 1.0 / double(p.temperature);
    for (size_t i = 0; i < c.size(); ++i) w.total += w.weights[i] = std::exp((double(c[i].logit) - max_logit) * inv_t);
    w.candidates = std::move(c);
    return w;
}

}  // namespace

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) { validate(params_); }

std::vector<TokenProb> Sampler::distribution(std::span<const float> logits) const {
    const Weighted w = run_chain(logits, history_, params_);
    std::vector<TokenProb> out(w.candidates.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = {w.candidates[i].id, w.weights[i] / w.total};
    return out;
}

int32_t Sampler::sample(std::span<const float> logits) {
    const Weighted w = run_chain(logits, history_, params_);
    int32_t token = w.candidates[0].id;
    if (params_.temperature > 0.0f) {
        // Step 7: one draw; the first candidate whose cumulative weight exceeds u * total.
        const double target = rng_.uniform24() * w.total;
        double cum = 0.0;
        token = w.candidates.back().id;  // reached only if rounding leaves cum <= target
        for (size_t i = 0; i < w.candidates.size(); ++i) {
            cum += w.weights[i];
            if (cum > target) {
                token = w.candidates[i].id;
                break;
            }
        }
    }
    accept(token);
    return token;
}

void Sampler::accept(int32_t token) {
    if (token < 0) fail(Status::invalid_argument, "sampler: token " + std::to_string(token) + " is negative");
    if (params_.repeat_last_n == 0) return;
    history_.push_back(token);
    while (history_.size() > size_t(params_.repeat_last_n)) history_.pop_front();
}

void Sampler::reset() {
    history_.clear();
    rng_.reseed(params_.seed);
}

}  // namespace strata::sample
