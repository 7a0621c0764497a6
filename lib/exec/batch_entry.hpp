// One entry of a batched decode (continuous batching): the next tokens of one sequence slot,
// run at that slot's n_past. Shared by exec::Context::decode_batch and exec::MultiSequence.
#pragma once

#include <cstdint>
#include <span>

namespace strata::exec {

struct BatchEntry {
    int32_t seq = 0;
    std::span<const int32_t> tokens;
};

}  // namespace strata::exec
