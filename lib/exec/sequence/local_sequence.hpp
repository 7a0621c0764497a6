// A sequence whose layers and sampler all run in this process, on the CPU backend.
#pragma once

#include "exec/context/context.hpp"
#include "exec/context/context_sequence.hpp"

namespace strata::exec {

class LocalSequence final : public ContextSequence<Context> {
public:
    LocalSequence(const gguf::ModelFile& file, const ContextParams& params, const sample::SamplerParams& sampling)
        : ContextSequence<Context>(sampling, file, params) {}
};

}  // namespace strata::exec
