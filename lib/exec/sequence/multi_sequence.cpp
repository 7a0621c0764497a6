#include "multi_sequence.hpp"

namespace strata::exec {

void check_batch(const MultiSequence& seqs, std::span<const BatchEntry> entries) {
    check_entries(entries, seqs.n_seq(), [&](const BatchEntry& e) {
        const Sequence& s = seqs.at(e.seq);
        check_decode(e.tokens, s.n_vocab(), s.n_past(), s.n_ctx());
    });
}

void SequenceList::decode_batch(std::span<const BatchEntry> entries, std::vector<std::vector<float>>& logits) {
    check_batch(*this, entries);
    logits.resize(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) at(entries[i].seq).decode(entries[i].tokens, false, &logits[i]);
}

}  // namespace strata::exec
