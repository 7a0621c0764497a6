// The struct behind strata_session, shared by capi/session.cpp (local sessions, every
// strata_session_* call) and capi/pipeline.cpp (sessions whose sequence is a pipeline).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "exec/sequence/multi_sequence.hpp"

struct strata_session {
    // What the session needs of its model, shared: the model may be freed first. Declared
    // before the sequence, which points into the file's mapping, so destroyed after it.
    std::shared_ptr<const strata::gguf::ModelFile> file;
    std::shared_ptr<const strata::token::Tokenizer> tokenizer;  // null when the vocabulary is unusable
    std::string tokenizer_error;                                // ... and why
    // Every sequence of the session (n_seq >= 1); `sequence` is the first, which the
    // single-sequence calls address.
    std::unique_ptr<strata::exec::MultiSequence> sequences;
    strata::exec::Sequence* sequence = nullptr;
    std::vector<float> logits;  // rows * n_vocab of the last decode that fetched logits
    size_t logits_rows = 0;
    // strata_session_seq_logits: each sequence's last-token row (empty: none readable).
    std::vector<std::vector<float>> seq_logits;
};

namespace strata::capi {

// The model's tokenizer, or null and why not (sessions still decode token ids without one).
struct SessionTokenizer {
    std::shared_ptr<const token::Tokenizer> tokenizer;
    std::string error;
};
SessionTokenizer session_tokenizer(strata_model* model);

// A session over `sequence` (`file` keeps the mapping the sequence reads alive).
strata_session* make_session(SessionTokenizer tokenizer, std::unique_ptr<exec::Sequence> sequence,
                             std::shared_ptr<const gguf::ModelFile> file);
// A session over several sequences (n_seq() >= 1).
strata_session* make_session(SessionTokenizer tokenizer, std::unique_ptr<exec::MultiSequence> sequences,
                             std::shared_ptr<const gguf::ModelFile> file);
// The session behind a handle, or invalid_argument for NULL.
strata_session& session_of(strata_session* session);
const strata_session& session_of(const strata_session* session);
// A decode, reset or truncate of sequence `seq` retires its last logits: its
// strata_session_seq_logits row, and for sequence 0 those of strata_session_logits too.
void forget_logits(strata_session& s, int32_t seq);
// strata_session_sample_top for one sequence: the arguments checked, the token drawn, the n_top
// (at most 64) most likely tokens written (-1 / -inf past a smaller vocabulary).
void sample_top(exec::Sequence& sequence, int32_t* out_token, size_t n_top, int32_t* top_tokens, float* top_logprobs);
// The sampler settings a strata_sampling_params asks for (validated when applied).
sample::SamplerParams sampler_params(const strata_sampling_params& p);
// The sampling settings of strata_sampling_default_params.
sample::SamplerParams default_sampling();

}  // namespace strata::capi
