#include "gpu_sequence.hpp"

#include "exec/context/context_sequence.hpp"
#include "gpu_context.hpp"

namespace strata::cuda {

std::unique_ptr<exec::Sequence> make_gpu_sequence(const gguf::ModelFile& file, const exec::ContextParams& params,
                                                  const sample::SamplerParams& sampling,
                                                  const std::function<void(uint64_t, uint64_t)>& progress) {
    GpuOptions options;
    options.progress = progress;
    return std::make_unique<exec::ContextSequence<GpuContext>>(sampling, file, params, options);
}

}  // namespace strata::cuda
