// The memory plan of a stage run on a GPU (cuda/gpu_context.cpp), as host arithmetic so that the
// CPU unit tests cover it: weights are the bytes uploaded (each tensor padded and aligned as the
// upload lays it out), the KV cache is the device cache for n_ctx, and scratch is the device
// activations of one micro-batch, the product workspaces, the RoPE tables (which grow with the
// context) and the attention workspace. The budget is the caller's (memory_budget, or the
// device's free memory: the GPU context asks cudaMemGetInfo).
#pragma once

#include <cstdint>

#include "exec/memory_plan.hpp"

namespace strata::model {
struct Hparams;
}

namespace strata::exec {

// Throws Error(unsupported) naming the architecture unless the GPU forward pass runs it (the
// llama family: grouped-query attention, dense SwiGLU FFN, head dims 64 and 128); the others
// run on the CPU backend for now.
void check_gpu_supports(const model::Hparams& hp);

// Every uploaded tensor starts on this boundary.
inline constexpr uint64_t kDeviceTensorAlign = 256;

// Device bytes one tensor of nbytes takes in the upload: nbytes + pad (kernels may read up to pad
// bytes past the last row), rounded up to kDeviceTensorAlign.
uint64_t device_tensor_bytes(uint64_t nbytes, uint64_t pad);

// Floats per token of the device activations of a llama-family stage: the hidden state, its
// normalized copy, the block output, q, k, v, the attention output, the FFN gate and up rows.
uint64_t device_activation_floats_per_token(const model::Hparams& hp);

// Rows of logits the last stage computes at once: all_logits over a longer micro-batch runs the
// output product in chunks of this many rows (a 150k vocabulary at 512 rows would otherwise take
// 300 MiB of device and as much pinned host memory).
inline constexpr int64_t kDeviceLogitRows = 32;
inline int64_t device_logit_rows(int64_t n_batch) { return n_batch < kDeviceLogitRows ? n_batch : kDeviceLogitRows; }

struct DeviceStageShape {
    int first_layer = 0;
    int last_layer = 0;          // exclusive
    int64_t n_ctx = 0;           // > 0
    int64_t n_batch = 0;         // the micro-batch, already capped at n_ctx (> 0)
    KvType kv_type = KvType::f16;
    uint64_t weight_bytes = 0;          // uploaded (sum of device_tensor_bytes)
    uint64_t matmul_workspace_bytes = 0;  // cuda::DeviceMatmul::workspace_bytes of the stage's limits
    uint64_t attention_workspace_bytes = 0;  // cuda::attention_workspace_bytes at n_ctx
};

// PlanInputs for make_plan (n_ctx_train and budget_bytes left to the caller). Per position: the
// KV rows of every layer and the RoPE cos/sin tables (2 * n_rot/2 floats); fixed: activations of
// n_batch tokens (plus token ids and the device n_past), device_logit_rows(n_batch) rows of logits
// on the last stage, workspaces. Throws what
// kv_bytes_per_position_range throws for a KV type the heads cannot use.
PlanInputs device_plan_inputs(const model::Hparams& hp, const DeviceStageShape& shape);

}  // namespace strata::exec
