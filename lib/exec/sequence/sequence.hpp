// A sequence: the KV state and sampler of one conversation, wherever its layers run. Sessions
// (the C ABI) drive this interface; a local Context implements it (local_sequence.hpp) and so
// does a pipeline head whose later layers and sampler live on remote workers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sample/sequence_sampler.hpp"

namespace strata::exec {

class Sequence {
public:
    virtual ~Sequence() = default;

    virtual int64_t n_ctx() const = 0;
    virtual int64_t n_past() const = 0;
    virtual int64_t n_vocab() const = 0;
    virtual std::string plan() const = 0;  // readable memory plan (all stages)

    virtual const sample::SamplerParams& sampling() const = 0;
    virtual void set_sampling(const sample::SamplerParams& params) = 0;  // history cleared, reseeded
    virtual void reset() = 0;  // empty cache, history cleared, reseeded
    // Keeps positions [0, n_past) (check_truncate's rule), history cleared, reseeded. Sequences
    // that cannot drop positions throw Error(unsupported).
    virtual void truncate(int64_t n_past);

    // Runs tokens at n_past (checked first: ids, room; nothing runs on error). With `logits`,
    // fills it with the last token's row (n_vocab) or every token's (all_logits); without,
    // only the sampler's row is kept (a pipeline moves no logits then).
    virtual void decode(std::span<const int32_t> tokens, bool all_logits, std::vector<float>* logits) = 0;
    // Draws the next token from the last decoded row (see SequenceSampler::sample).
    virtual int32_t sample(uint32_t n_top, std::vector<sample::TokenLogprob>* top) = 0;
    // decode(tokens) then sample(): one round trip on a pipeline.
    virtual int32_t decode_and_sample(std::span<const int32_t> tokens, uint32_t n_top,
                                      std::vector<sample::TokenLogprob>* top) {
        decode(tokens, false, nullptr);
        return sample(n_top, top);
    }
};

// Throws invalid_argument / context_overflow (naming the token or the room left) unless every
// token is in [0, n_vocab) and n_past + n fits n_ctx. Shared by every Sequence.
void check_decode(std::span<const int32_t> tokens, int64_t n_vocab, int64_t n_past, int64_t n_ctx);

// A context's own check (Context, GpuContext): Error(invalid_argument) unless 0 < n_tokens and
// n_past + n_tokens fits n_ctx, saying so and that nothing was run.
void check_context_room(int64_t n_tokens, int64_t n_past, int64_t n_ctx);

// Truncating a context at n_past to `to`: any position within [0, n_past], but a stage with
// recurrent (KDA) layers only restarts (0) or keeps everything (n_past): its state holds every
// position folded together. can_truncate says whether; check_truncate throws
// Error(invalid_argument) out of range, Error(unsupported) for a recurrent stage, saying why.
bool can_truncate(int64_t to, int64_t n_past, bool recurrent);
void check_truncate(int64_t to, int64_t n_past, bool recurrent);

// A context's token check: Error(invalid_argument) naming the first id outside [0, n_vocab).
void check_token_ids(std::span<const int32_t> tokens, int64_t n_vocab);

}  // namespace strata::exec
