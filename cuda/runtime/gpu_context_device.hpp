// The device state of a GpuContext (internal to cuda/gpu_context*.cpp): the stream, the uploaded
// weights and the product, the caches (grouped-query KV, MLA latent rows, KDA recurrent state),
// the activations of one micro-batch (carved from exec::device_activation_widths, the widths
// the memory plan counts), the RoPE tables, workspaces, the pinned host buffers every transfer
// goes through, and the captured one-token graphs.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/attention/attention.cuh"
#include "exec/device_activations.hpp"
#include "exec/moe/expert_groups.hpp"
#include "exec/moe/moe_router.hpp"
#include "gpu_context.hpp"
#include "gpu_weights.hpp"
#include "matmul.hpp"
#include "quant/dot/iq1s_dot.hpp"

namespace strata::cuda {

struct CudaFree {
    void operator()(void* p) const { cudaFree(p); }
};
struct PinnedFree {
    void operator()(void* p) const { cudaFreeHost(p); }
};
using DevicePtr = std::unique_ptr<void, CudaFree>;
using PinnedPtr = std::unique_ptr<void, PinnedFree>;

// Throw Error(out_of_memory) naming what the bytes were for when the allocation fails.
DevicePtr device_alloc(uint64_t bytes, const char* what);
PinnedPtr pinned_alloc(uint64_t bytes, const char* what);

struct GpuContext::Device {
    cudaStream_t stream = nullptr;
    std::unique_ptr<GpuWeights> w;
    std::unique_ptr<DeviceMatmul> mm;

    // Per stage layer: its slot in the cache of its kind (-1: none).
    std::vector<int> gqa_slot, mla_slot, kda_slot;

    // grouped-query KV cache: [gqa slot][K, V][n_ctx][row_bytes]
    AttentionShape attn;
    uint64_t kv_layer_bytes = 0;
    uint8_t* kv = nullptr;
    // MLA latent cache: [mla slot][n_ctx][C + R] halves
    __half* latent = nullptr;
    uint64_t latent_layer_halves = 0;
    // KDA state per kda slot: q, k, v conv windows [3][D][K-1], then [H][dk][dk]
    float* kda = nullptr;
    uint64_t kda_layer_floats = 0, kda_conv_floats = 0;
    uint64_t kda_bytes = 0;  // all slots

    exec::DeviceActivationWidths widths;
    exec::DeviceActivationSet<float*> a;  // the activations
    int32_t* ints = nullptr;              // [n_batch][3 * n_used]: MoE chosen experts / grouping rows
    float* logits = nullptr;
    int32_t* ids = nullptr;
    int32_t* n_past = nullptr;

    const float* cos = nullptr;
    const float* sin = nullptr;
    int n_pairs = 0;
    void* ws = nullptr;        // attention workspace
    // One-token device MoE (route_ws_mem, the plan's route_workspace_bytes): the moe_route
    // workspace, then the Q8_K activations of the expert input (Le values) and of the n_used
    // activated rows (n_used x n_ff_exp), each on a 256-byte boundary.
    void* route_ws = nullptr;
    void* moe_act_in = nullptr;
    void* moe_act_h = nullptr;
    quant::Iq1sKernel moe_order = quant::Iq1sKernel::scalar;  // the CPU kernel whose float steps the experts take
    bool device_routing = false;
    std::unique_ptr<exec::MoeRouter> router;          // the host routing path
    std::vector<std::vector<float>> host_bias;        // per layer: exp_probs_b (host routing)
    exec::ExpertGroups groups;                        // host routing: the rows grouped by expert
    DevicePtr kv_mem, latent_mem, kda_mem, act_mem, rope_mem, ws_mem, route_ws_mem;

    PinnedPtr h_ids_mem, h_n_past_mem, h_in_mem, h_out_mem, h_router_mem, h_ints_mem, h_w_mem;
    int32_t* h_ids = nullptr;
    int32_t* h_n_past = nullptr;
    float* h_in = nullptr;
    float* h_out = nullptr;
    float* h_router = nullptr;  // [n_batch][n_expert] router logits (host routing)
    int32_t* h_ints = nullptr;  // [n_batch][3 * n_used]
    float* h_w = nullptr;       // [n_batch][n_used]

    cudaGraphExec_t graph[2] = {nullptr, nullptr};  // per Input: tokens, hidden
    int64_t one_token_runs[2] = {0, 0};

    float* kda_conv(int slot, int which) { return kda + uint64_t(slot) * kda_layer_floats + uint64_t(which) * (kda_conv_floats / 3); }
    float* kda_state(int slot) { return kda + uint64_t(slot) * kda_layer_floats + kda_conv_floats; }

    ~Device();
};

}  // namespace strata::cuda
