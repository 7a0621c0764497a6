// Several sequences behind one session (continuous batching): each is a Sequence of its own
// (decode, sample, reset, sampling), and decode_batch runs the next tokens of several of them in
// one step. SequenceList is the plain form: one independent Sequence per slot, stepped one after
// another (pipelines, the GPU); BatchedSequences (batched_sequence.hpp) is the CPU form, which
// runs every entry through each matmul together.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "batch_entry.hpp"
#include "sequence.hpp"

namespace strata::exec {

class MultiSequence {
public:
    virtual ~MultiSequence() = default;
    virtual int32_t n_seq() const = 0;
    virtual Sequence& at(int32_t seq) = 0;  // 0 <= seq < n_seq (checked by the caller)
    virtual const Sequence& at(int32_t seq) const = 0;
    // Runs every entry at its sequence's n_past; logits[i] gets entry i's last-token row (n_vocab
    // floats). Checks every entry (sequence, repeats, ids, room) before anything runs.
    virtual void decode_batch(std::span<const BatchEntry> entries, std::vector<std::vector<float>>& logits) = 0;
};

// check_entries with each sequence's check_decode (bad ids; context_overflow when the tokens do
// not fit), naming the entry. Shared by every MultiSequence.
void check_batch(const MultiSequence& seqs, std::span<const BatchEntry> entries);

class SequenceList final : public MultiSequence {
public:
    explicit SequenceList(std::vector<std::unique_ptr<Sequence>> seqs) : seqs_(std::move(seqs)) {}
    int32_t n_seq() const override { return int32_t(seqs_.size()); }
    Sequence& at(int32_t seq) override { return *seqs_[size_t(seq)]; }
    const Sequence& at(int32_t seq) const override { return *seqs_[size_t(seq)]; }
    void decode_batch(std::span<const BatchEntry> entries, std::vector<std::vector<float>>& logits) override;

private:
    std::vector<std::unique_ptr<Sequence>> seqs_;
};

}  // namespace strata::exec
