// A pipeline stage's layers on the GPU (strata-worker --device cuda, strata_worker_params.device):
// the StageContext of a GpuContext, and the device's free memory a worker advertises. No CUDA
// types here: the C ABI includes this header.
//
// UNTESTED ON A GPU until a device check has run it (a worker with device CUDA serving a stage).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "exec/context/stage_context.hpp"

namespace strata::cuda {

// Error(unsupported) with the CUDA runtime's reason unless a CUDA device can be used.
void require_usable_gpu();

// Throws as GpuContext's constructor does (unsupported, out_of_memory, invalid_argument).
// progress: the weight upload (done_bytes, total_bytes); may be empty.
std::unique_ptr<exec::StageContext> make_gpu_stage_context(const gguf::ModelFile& file,
                                                           const exec::ContextParams& params,
                                                           const std::function<void(uint64_t, uint64_t)>& progress);

// The device bytes a GPU stage over params' layer range keeps beside its layers' weights, cache
// and state: the activations of one micro-batch, workspaces, RoPE tables and attention scratch at
// n_ctx (params: layer range, n_ctx, n_batch, kv_type). Host arithmetic, the device plan's: no
// GPU needed. Throws what the device plan throws for a model the GPU cannot run.
uint64_t gpu_stage_scratch_bytes(const gguf::ModelFile& file, const exec::ContextParams& params);

// The current device's free memory in bytes (cudaMemGetInfo); Error(unsupported) without one.
uint64_t gpu_free_memory();

}  // namespace strata::cuda
