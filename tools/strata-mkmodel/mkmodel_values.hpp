// Seeded random values for strata-mkmodel's tensors. Each tensor (and each slice of a per-slice
// expert tensor) has its own generator, seeded by (seed, key[, slice]), so that tensors can be made
// in any order, on any thread, and still come out the same. Public headers only.
#pragma once

#include <cstdint>
#include <vector>

#include "mkmodel_plan.hpp"

namespace mkmodel {

// Every value of the tensor, row-major (Derive::k_b / v_b: taken from the attn_kv_b matrix whose
// generator `spec.key` selects, so the MLA and the legacy form of a seed hold the same weights).
std::vector<float> make_values(const TensorSpec& spec, uint64_t seed);

// Slice `slice` (ne[2] index) of a per-slice tensor: ne[0] * ne[1] values.
std::vector<float> make_slice(const TensorSpec& spec, uint64_t seed, int64_t slice);

}  // namespace mkmodel
