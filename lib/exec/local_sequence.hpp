// A sequence whose layers and sampler all run in this process.
#pragma once

#include <memory>

#include "exec/context.hpp"
#include "exec/sequence.hpp"

namespace strata::exec {

class LocalSequence final : public Sequence {
public:
    LocalSequence(const gguf::ModelFile& file, const ContextParams& params, const sample::SamplerParams& sampling);

    int64_t n_ctx() const override { return ctx_.n_ctx(); }
    int64_t n_past() const override { return ctx_.n_past(); }
    int64_t n_vocab() const override { return ctx_.n_vocab(); }
    std::string plan() const override { return ctx_.plan().describe(); }
    const sample::SamplerParams& sampling() const override { return sampler_.params(); }
    void set_sampling(const sample::SamplerParams& params) override { sampler_.set_params(params); }
    void reset() override;
    void decode(std::span<const int32_t> tokens, bool all_logits, std::vector<float>* logits) override;
    int32_t sample(uint32_t n_top, std::vector<sample::TokenLogprob>* top) override {
        return sampler_.sample(n_top, top);
    }

private:
    Context ctx_;
    sample::SequenceSampler sampler_;
    std::vector<float> scratch_;  // logits when the caller wants none kept
};

}  // namespace strata::exec
