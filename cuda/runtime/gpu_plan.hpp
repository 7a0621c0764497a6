// The device memory plan of one stage, as host arithmetic (no GPU needed): what GpuContext plans
// with before allocating, and what strata_model_plan_json reports for STRATA_DEVICE_CUDA, from one
// function so that the two cannot disagree. The figures are checked without a GPU
// (tests/python/pipeline/test_plan.py); the GPU context built on them is UNTESTED ON A GPU since this split.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/attention/attention.cuh"
#include "device_carver.hpp"
#include "exec/context/context.hpp"
#include "exec/memory/memory_plan.hpp"
#include "matmul.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"

namespace strata::cuda {

// Refuses what the GPU context refuses before it binds anything: a model the GPU cannot run
// (exec::check_gpu_supports), a negative n_ctx or kda_chunk, a non-positive n_batch.
void check_device_params(const model::Hparams& hp, const exec::ContextParams& params);

struct DeviceStagePlan {
    exec::PlanInputs inputs;           // n_ctx_train set; budget_bytes left to the caller
    int64_t n_ctx = 0;                 // resolved (0 in the params: n_ctx_train capped at 4096)
    int64_t n_batch = 0;               // capped at n_ctx
    MatmulLimits limits;               // DeviceMatmul's
    AttentionShape attn;               // grouped-query layers (zero when the stage has none)
    uint64_t attention_workspace_bytes = 0;
    bool any_moe = false;
    std::string host_routing;          // with MoE: "" when it routes on the device, else why not
    uint64_t route_workspace_bytes = 0;  // the one-token device MoE's (carve_moe_workspace)
};

// The plan of the stage whose weights w binds (params' layer range, n_ctx, n_batch, kv_type,
// kda_chunk; n_threads and memory_budget unused). Throws what check_device_params and
// exec::device_plan_inputs throw, and Error(invalid_argument) for an n_ctx beyond 32-bit
// positions or a kda_chunk beyond the kernel's tiles on a stage with KDA layers.
DeviceStagePlan device_stage_plan(const model::Hparams& hp, const model::ModelWeights& w,
                                  const exec::ContextParams& params);

inline exec::PlanInputs device_stage_plan_inputs(const model::Hparams& hp, const model::ModelWeights& w,
                                                 const exec::ContextParams& params) {
    return device_stage_plan(hp, w, params).inputs;
}

// The same from the file, for a plan made before any context exists (strata_model_plan_json, a
// pipeline head sizing GPU workers): check_device_params first, then the stage's weights bound.
exec::PlanInputs device_stage_plan_inputs(const gguf::ModelFile& file, const model::Hparams& hp,
                                          const exec::ContextParams& params);

// The one-token device MoE's workspace: routing scratch, then the Q8_K activations of the expert
// input and of the activated expert rows. A carver over a null base measures.
void carve_moe_workspace(Carver& c, const model::Hparams& hp, void*& route_ws, void*& act_in, void*& act_h);

}  // namespace strata::cuda
