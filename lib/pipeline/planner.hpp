// Layer plans: which contiguous layer range each stage of a pipeline holds.
//
// Stage 0 is the head (embeddings, first layers), the last stage also holds the output norm
// and head. A plan is either given (checked here: contiguous, covering, non-empty) or made
// from each stage's memory: the layers are split as evenly as the stages' capacities allow.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/kv_cache.hpp"

namespace strata::gguf {
class ModelFile;
}

namespace strata::pipeline {

using LayerRange = std::pair<int, int>;  // [first, last)

// "0:8,8:16,16:24" -> ranges; invalid_argument naming the bad part.
std::vector<LayerRange> parse_layer_plan(const std::string& text);
std::string format_layer_plan(const std::vector<LayerRange>& plan);

// Throws invalid_argument unless there are n_stages ranges, contiguous from 0 to n_layers,
// each holding at least one layer.
void check_layer_plan(const std::vector<LayerRange>& plan, int n_layers, size_t n_stages);

// Bytes a stage needs, by part: per layer (weights + KV cache for n_ctx), and the fixed parts
// of the first stage (token embeddings) and the last (output norm and head).
struct LayerCosts {
    std::vector<uint64_t> layer_bytes;
    uint64_t first_stage_bytes = 0;
    uint64_t last_stage_bytes = 0;
    uint64_t stage_bytes(const LayerRange& r, bool first, bool last) const;
};
LayerCosts layer_costs(const gguf::ModelFile& file, int64_t n_ctx, exec::KvType kv_type);

// A plan for stages with these capacities (bytes each may use; 0 capacity = unknown, treated
// as unlimited): layers in proportion to capacity, then moved off any stage that would not
// fit. Throws out_of_memory naming the stage and the bytes when no plan fits.
std::vector<LayerRange> plan_by_memory(const LayerCosts& costs, const std::vector<uint64_t>& capacity);

}  // namespace strata::pipeline
