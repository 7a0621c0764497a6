// Layer plans: which contiguous layer range each stage of a pipeline holds. Part of strata_core
// (not only of strata_pipeline): the plan query strata_model_plan_json uses it too.
//
// Stage 0 is the head (embeddings, first layers), the last stage also holds the output norm
// and head. A plan is either given (checked here: contiguous, covering, non-empty) or made
// from each stage's memory: the layers are split as evenly as the stages' capacities allow.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/attention/kv_cache.hpp"

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
    uint64_t tied_output_bytes = 0;  // part of last_stage_bytes: token_embd, read again as the output
    // One stage that is both first and last maps token_embd once.
    uint64_t stage_bytes(const LayerRange& r, bool first, bool last) const;
};
// The weights alone: per layer its blk.N tensors (plus what binding builds in memory, the legacy
// MLA k_b), token_embd on the first stage, everything else (output_norm, output) on the last,
// and token_embd there again when the output is tied to it. Reads the tensor table only.
LayerCosts weight_costs(const gguf::ModelFile& file);
// weight_costs plus each layer's KV cache for n_ctx positions.
LayerCosts layer_costs(const gguf::ModelFile& file, int64_t n_ctx, exec::KvType kv_type);

// What a GPU stage's layers may use of the free device memory it reports: that less the device
// scratch every GPU stage keeps beside its layers (activations of a micro-batch, workspaces, RoPE
// tables and attention scratch for the context), which the per-layer costs leave out. 1 byte when
// the scratch alone does not fit, so that the planner moves the layers elsewhere or refuses;
// unknown (0) stays unknown.
uint64_t gpu_stage_capacity(uint64_t free_bytes, uint64_t scratch_bytes);

// A plan for stages with these capacities (bytes each may use; 0 capacity = unknown, treated
// as unlimited): layers in proportion to capacity, then moved off any stage that would not
// fit. Throws out_of_memory naming the stage and the bytes when no plan fits.
std::vector<LayerRange> plan_by_memory(const LayerCosts& costs, const std::vector<uint64_t>& capacity);

}  // namespace strata::pipeline
