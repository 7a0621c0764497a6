#include "gpu_stage.hpp"

#include <cuda_runtime.h>

#include <string>

#include "gpu_context.hpp"
#include "gpu_plan.hpp"
#include "model/hparams.hpp"
#include "util/error.hpp"

namespace strata::cuda {

void require_usable_gpu() {
    if (std::string why = gpu_unavailable_reason(); !why.empty()) fail(Status::unsupported, why);
}

std::unique_ptr<exec::StageContext> make_gpu_stage_context(const gguf::ModelFile& file,
                                                           const exec::ContextParams& params,
                                                           const std::function<void(uint64_t, uint64_t)>& progress) {
    GpuOptions options;
    options.progress = progress;
    return std::make_unique<exec::StageContextOf<GpuContext>>(file, params, options);
}

uint64_t gpu_stage_scratch_bytes(const gguf::ModelFile& file, const exec::ContextParams& params) {
    const exec::PlanInputs in = device_stage_plan_inputs(file, model::read_hparams(file), params);
    return in.scratch_fixed_bytes + in.scratch_bytes_per_position * uint64_t(in.n_ctx);
}

uint64_t gpu_free_memory() {
    require_usable_gpu();
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaError_t e = cudaMemGetInfo(&free_bytes, &total_bytes); e != cudaSuccess) {
        (void)cudaGetLastError();
        fail(Status::unsupported, std::string("asking the device for its free memory: ") + cudaGetErrorString(e));
    }
    return free_bytes;
}

}  // namespace strata::cuda
