// The memory plan of a stage run on a GPU (cuda/runtime/gpu_context.cpp), as host arithmetic so that the
// CPU unit tests cover it: weights are the bytes uploaded (each tensor padded and aligned as the
// upload lays it out), the KV cache is the device cache for n_ctx, and scratch is the device
// activations of one micro-batch, the product workspaces, the RoPE tables (which grow with the
// context) and the attention workspace. The budget is the caller's (memory_budget, or the
// device's free memory: the GPU context asks cudaMemGetInfo).
#pragma once

#include <cstdint>
#include <string>

#include "memory_plan.hpp"

namespace strata::model {
struct Hparams;
struct ModelWeights;
}

namespace strata::exec {

// Throws Error(unsupported) saying what the GPU forward pass cannot run in this model: it runs the
// llama family (grouped-query attention with head dims 64 and 128, dense SwiGLU FFN) and the
// deepseek2 / kimi-linear / kimi-k3 layers (latent attention with a latent of at most 1024 and a
// rope part of at most 128, KDA heads of 32..128 channels, MoE, SiTU, attention residuals banking at
// most 63 checkpoints).
void check_gpu_supports(const model::Hparams& hp);

// Whether the GPU context can capture its one-token step as a CUDA graph: every MoE layer's
// routed experts are IQ1_S with rows of whole 256-weight blocks (routed and multiplied on the
// device); otherwise a one-token step routes on the host (a device-to-host copy per MoE layer).
// "" when it can, else why not, naming the tensor.
std::string gpu_host_routing_reason(const model::ModelWeights& w);

// Whether layers [first, last) rotate anything (grouped-query layers, latent attention that
// rotates its rope part), so that the stage keeps RoPE cos/sin tables of n_rot/2 pairs per position.
bool device_rope_tables(const model::Hparams& hp, int first, int last);

// Every uploaded tensor starts on this boundary.
inline constexpr uint64_t kDeviceTensorAlign = 256;

// Device bytes one tensor of nbytes takes in the upload: nbytes + pad (kernels may read up to pad
// bytes past the last row), rounded up to kDeviceTensorAlign.
uint64_t device_tensor_bytes(uint64_t nbytes, uint64_t pad);


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
    uint64_t route_workspace_bytes = 0;      // one-token device MoE: routing scratch + Q8_K activations
};

// PlanInputs for make_plan (n_ctx_train and budget_bytes left to the caller). Per position: the
// KV rows of every grouped-query layer, the latent rows (f16) of every MLA layer, and the RoPE
// cos/sin tables (2 * n_rot/2 floats) when a layer rotates; the KDA layers' fixed state
// (state_bytes); fixed: the activations of n_batch tokens (device_activations.hpp) plus token
// ids and the device n_past, device_logit_rows(n_batch) rows of logits on the last stage,
// workspaces. Throws what kv_bytes_per_position_range throws for a KV type the heads cannot use,
// and Error(unsupported) for a q8_0 cache with latent attention (the GPU's latent cache is f16).
PlanInputs device_plan_inputs(const model::Hparams& hp, const DeviceStageShape& shape);

}  // namespace strata::exec
