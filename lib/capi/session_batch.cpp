// strata_session_decode_batch and the per-sequence calls (strata_session_seq_*): several
// sequences of one session (exec::MultiSequence).
#include <string>
#include <vector>

#include "capi/guard.hpp"
#include "capi/session.hpp"

using strata::Status;
using strata::fail;
using strata::capi::require;

using strata::capi::forget_logits;
using strata::capi::session_of;

namespace {

// The sequence `seq` of the session, or invalid_argument naming the range.
void check_seq(const strata_session& s, int32_t seq) {
    if (seq < 0 || seq >= s.sequences->n_seq())
        fail(Status::invalid_argument, "seq is " + std::to_string(seq) + ", the session has sequences 0.." +
                                           std::to_string(s.sequences->n_seq() - 1));
}

strata::exec::Sequence& seq_of(strata_session& s, int32_t seq) {
    check_seq(s, seq);
    return s.sequences->at(seq);
}

}  // namespace

extern "C" {

strata_status strata_session_n_seq(const strata_session* session, int32_t* out_n_seq) {
    STRATA_API_BEGIN
    *require(out_n_seq, "out_n_seq") = session_of(session).sequences->n_seq();
    STRATA_API_END
}

strata_status strata_session_decode_batch(strata_session* session, const strata_seq_tokens* entries, size_t n_entries) {
    STRATA_API_BEGIN
    auto& s = session_of(session);
    if (n_entries == 0) fail(Status::invalid_argument, "n_entries is 0: nothing to decode");
    require(entries, "entries");
    std::vector<strata::exec::BatchEntry> batch(n_entries);
    for (size_t i = 0; i < n_entries; ++i) {
        if (entries[i].n_tokens == 0)
            fail(Status::invalid_argument, "entries[" + std::to_string(i) + "] has no tokens (n_tokens 0)");
        if (!entries[i].tokens) fail(Status::invalid_argument, "entries[" + std::to_string(i) + "].tokens is NULL");
        batch[i] = {entries[i].seq, {entries[i].tokens, entries[i].n_tokens}};
    }
    strata::exec::check_batch(*s.sequences, batch);  // before any logits are retired
    for (const auto& e : batch) forget_logits(s, e.seq);
    std::vector<std::vector<float>> logits;
    s.sequences->decode_batch(batch, logits);
    for (size_t i = 0; i < batch.size(); ++i) s.seq_logits[size_t(batch[i].seq)] = std::move(logits[i]);
    STRATA_API_END
}

strata_status strata_session_seq_logits(const strata_session* session, int32_t seq, const float** out_logits) {
    STRATA_API_BEGIN
    const auto& s = session_of(session);
    require(out_logits, "out_logits");
    check_seq(s, seq);
    const auto& row = s.seq_logits[size_t(seq)];
    if (row.empty())
        fail(Status::invalid_argument,
             "sequence " + std::to_string(seq) + " has no logits: decode it with strata_session_decode_batch first");
    *out_logits = row.data();
    STRATA_API_END
}

strata_status strata_session_seq_n_past(const strata_session* session, int32_t seq, int64_t* out_n_past) {
    STRATA_API_BEGIN
    const auto& s = session_of(session);
    require(out_n_past, "out_n_past");
    check_seq(s, seq);
    *out_n_past = s.sequences->at(seq).n_past();
    STRATA_API_END
}

strata_status strata_session_seq_reset(strata_session* session, int32_t seq) {
    STRATA_API_BEGIN
    auto& s = session_of(session);
    auto& sq = seq_of(s, seq);
    forget_logits(s, seq);
    sq.reset();
    STRATA_API_END
}

strata_status strata_session_seq_truncate(strata_session* session, int32_t seq, int64_t n_past) {
    STRATA_API_BEGIN
    auto& s = session_of(session);
    auto& sq = seq_of(s, seq);
    if (n_past < 0 || n_past > sq.n_past())
        fail(Status::invalid_argument, "n_past is " + std::to_string(n_past) + ", sequence " + std::to_string(seq) +
                                           " holds " + std::to_string(sq.n_past()) + " positions");
    sq.truncate(n_past);
    forget_logits(s, seq);
    STRATA_API_END
}

strata_status strata_session_seq_set_sampling(strata_session* session, int32_t seq, const strata_sampling_params* params) {
    STRATA_API_BEGIN
    auto& s = session_of(session);
    auto& sq = seq_of(s, seq);
    strata::capi::require_struct(params, sizeof(strata_sampling_params), "params");
    sq.set_sampling(strata::capi::sampler_params(*params));
    STRATA_API_END
}

strata_status strata_session_seq_sample_top(strata_session* session, int32_t seq, int32_t* out_token, size_t n_top,
                                            int32_t* top_tokens, float* top_logprobs) {
    STRATA_API_BEGIN
    auto& s = session_of(session);
    strata::capi::sample_top(seq_of(s, seq), out_token, n_top, top_tokens, top_logprobs);
    STRATA_API_END
}

}  // extern "C"
