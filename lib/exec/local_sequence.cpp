#include "exec/local_sequence.hpp"

#include <string>

#include "util/error.hpp"

namespace strata::exec {

void check_decode(std::span<const int32_t> tokens, int64_t n_vocab, int64_t n_past, int64_t n_ctx) {
    if (tokens.empty()) fail(Status::invalid_argument, "n_tokens must be at least 1");
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            fail(Status::invalid_argument, "token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
                                               ", outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    if (int64_t(tokens.size()) > n_ctx - n_past)
        fail(Status::context_overflow, std::to_string(tokens.size()) +
                                           " tokens do not fit the configured context of " + std::to_string(n_ctx) +
                                           " tokens: " + std::to_string(n_past) + " are in use, " +
                                           std::to_string(n_ctx - n_past) + " free");
}

LocalSequence::LocalSequence(const gguf::ModelFile& file, const ContextParams& params,
                             const sample::SamplerParams& sampling)
    : ctx_(file, params), sampler_(sampling) {}

void LocalSequence::reset() {
    ctx_.reset();
    sampler_.reset();
}

void LocalSequence::decode(std::span<const int32_t> tokens, bool all_logits, std::vector<float>* logits) {
    check_decode(tokens, ctx_.n_vocab(), ctx_.n_past(), ctx_.n_ctx());
    std::vector<float>& out = logits ? *logits : scratch_;
    const size_t n_vocab = size_t(ctx_.n_vocab());
    const size_t rows = logits && all_logits ? tokens.size() : 1;
    out.resize(rows * n_vocab);
    ctx_.decode(tokens, out.data(), rows > 1);
    sampler_.decoded(tokens, {out.data() + (rows - 1) * n_vocab, n_vocab});
}

}  // namespace strata::exec
