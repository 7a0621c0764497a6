// The checks every Sequence and context shares before running anything.
#include "sequence.hpp"

#include <string>

#include "util/error.hpp"

namespace strata::exec {

void Sequence::truncate(int64_t) {
    fail(Status::unsupported, "this sequence cannot drop positions (a pipeline's): reset it instead");
}

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

void check_context_room(int64_t n_tokens, int64_t n_past, int64_t n_ctx) {
    if (n_tokens <= 0) fail(Status::invalid_argument, "no tokens to run (n_tokens = " + std::to_string(n_tokens) + ")");
    if (n_tokens > n_ctx - n_past)
        fail(Status::invalid_argument, "context overflow: n_past " + std::to_string(n_past) + " + " +
                                           std::to_string(n_tokens) + " tokens exceeds the configured context n_ctx = " +
                                           std::to_string(n_ctx) + "; nothing was run");
}

bool can_truncate(int64_t to, int64_t n_past, bool recurrent) {
    return to >= 0 && to <= n_past && (to == 0 || to == n_past || !recurrent);
}

void check_truncate(int64_t to, int64_t n_past, bool recurrent) {
    if (to < 0 || to > n_past)
        fail(Status::invalid_argument, "truncate(" + std::to_string(to) + "): must be within [0, n_past = " +
                                           std::to_string(n_past) + "]");
    if (!can_truncate(to, n_past, recurrent))
        fail(Status::unsupported, "truncate(" + std::to_string(to) + "): this stage has recurrent (KDA) layers, whose "
                                  "state cannot drop positions; truncate to 0 (restart) or keep all " +
                                      std::to_string(n_past));
}

void check_token_ids(std::span<const int32_t> tokens, int64_t n_vocab) {
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            fail(Status::invalid_argument, "token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                                               " is out of range: n_vocab = " + std::to_string(n_vocab));
}

}  // namespace strata::exec
