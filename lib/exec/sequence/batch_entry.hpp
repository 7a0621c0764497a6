// One entry of a batched decode (continuous batching): the next tokens of one sequence slot,
// run at that slot's n_past. Shared by exec::Context::decode_batch and exec::MultiSequence.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

namespace strata::exec {

struct BatchEntry {
    int32_t seq = 0;
    std::span<const int32_t> tokens;
};

// The checks every batched decode makes before anything runs: Error(invalid_argument) for no
// entries, and for an entry whose sequence is outside 0..n_seq-1, repeats an earlier one or has
// no tokens; then check_one(entry) (ids, room), its error given again naming the entry ("decode_batch
// entry i (sequence s): ...") with its own status.
void check_entries(std::span<const BatchEntry> entries, int32_t n_seq,
                   const std::function<void(const BatchEntry&)>& check_one);

}  // namespace strata::exec
