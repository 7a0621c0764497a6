// A sequence whose layers all run on the GPU (gpu_context.hpp) and whose sampler runs on the
// host, as LocalSequence does for the CPU. No CUDA types here: the C ABI includes this header.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_forward.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "exec/context/context.hpp"
#include "exec/sequence/sequence.hpp"
#include "sample/sequence_sampler.hpp"

namespace strata::gguf {
class ModelFile;
}

namespace strata::cuda {

// Throws Error(unsupported) with the CUDA runtime's reason when there is no usable GPU, or
// saying what of the model the GPU kernels cannot take; Error(out_of_memory) when the plan does
// not fit the device. progress: the weight upload (done_bytes, total_bytes); may be empty.
std::unique_ptr<exec::Sequence> make_gpu_sequence(const gguf::ModelFile& file, const exec::ContextParams& params,
                                                  const sample::SamplerParams& sampling,
                                                  const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace strata::cuda
