// Which layers of a stage's range are recurrent (KDA: a fixed per-sequence state instead of a
// KV cache), as the model reads them; and the check the head makes of a worker's report
// (stage_ready) against its own reading: both sides must keep state for the same layers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace strata::model {
struct Hparams;
}

namespace strata::pipeline {

// The recurrent layers of [begin, end), ascending.
std::vector<uint32_t> recurrent_layers(const model::Hparams& hp, uint32_t begin, uint32_t end);

// "" when the two ascending lists are equal; otherwise each layer that differs and on which side
// it is recurrent: "layer 3 is recurrent (KDA) for the head only; layer 4 for the worker only".
std::string recurrent_layers_difference(std::span<const uint32_t> head, std::span<const uint32_t> worker);

}  // namespace strata::pipeline
