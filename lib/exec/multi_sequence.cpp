#include "exec/multi_sequence.hpp"

#include <string>

#include "util/error.hpp"

namespace strata::exec {

void check_batch(const MultiSequence& seqs, std::span<const BatchEntry> entries) {
    if (entries.empty()) fail(Status::invalid_argument, "decode_batch: no entries");
    std::vector<bool> seen(size_t(seqs.n_seq()), false);
    for (size_t i = 0; i < entries.size(); ++i) {
        const BatchEntry& e = entries[i];
        const std::string which = "decode_batch entry " + std::to_string(i) + " (sequence " + std::to_string(e.seq) + ")";
        if (e.seq < 0 || e.seq >= seqs.n_seq())
            fail(Status::invalid_argument,
                 which + ": the session has sequences 0.." + std::to_string(seqs.n_seq() - 1));
        if (seen[size_t(e.seq)]) fail(Status::invalid_argument, which + ": the sequence appears twice in one call");
        seen[size_t(e.seq)] = true;
        if (e.tokens.empty()) fail(Status::invalid_argument, which + ": no tokens");
        const Sequence& s = seqs.at(e.seq);
        try {
            check_decode(e.tokens, s.n_vocab(), s.n_past(), s.n_ctx());
        } catch (const Error& err) {
            fail(err.status(), which + ": " + err.what());
        }
    }
}

void SequenceList::decode_batch(std::span<const BatchEntry> entries, std::vector<std::vector<float>>& logits) {
    check_batch(*this, entries);
    logits.resize(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) at(entries[i].seq).decode(entries[i].tokens, false, &logits[i]);
}

}  // namespace strata::exec
