// A sequence whose layers and sampler all run in this process, over any context type with
// exec::Context's interface (n_ctx, n_past, n_vocab, plan, reset, decode): the CPU Context
// (LocalSequence) and the CUDA backend's GpuContext share this one implementation.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "exec/sequence/sequence.hpp"

namespace strata::exec {

template <class Ctx>
class ContextSequence : public Sequence {
public:
    template <class... CtxArgs>
    explicit ContextSequence(const sample::SamplerParams& sampling, CtxArgs&&... ctx_args)
        : ctx_(std::forward<CtxArgs>(ctx_args)...), sampler_(sampling) {}

    int64_t n_ctx() const override { return ctx_.n_ctx(); }
    int64_t n_past() const override { return ctx_.n_past(); }
    int64_t n_vocab() const override { return ctx_.n_vocab(); }
    std::string plan() const override { return ctx_.plan().describe(); }
    const sample::SamplerParams& sampling() const override { return sampler_.params(); }
    void set_sampling(const sample::SamplerParams& params) override { sampler_.set_params(params); }
    void reset() override {
        ctx_.reset();
        sampler_.reset();
    }
    void truncate(int64_t n_past) override {
        ctx_.truncate(n_past);  // checks the rule first
        sampler_.reset();
    }
    void decode(std::span<const int32_t> tokens, bool all_logits, std::vector<float>* logits) override {
        check_decode(tokens, ctx_.n_vocab(), ctx_.n_past(), ctx_.n_ctx());
        std::vector<float>& out = logits ? *logits : scratch_;
        const size_t n_vocab = size_t(ctx_.n_vocab());
        const size_t rows = logits && all_logits ? tokens.size() : 1;
        out.resize(rows * n_vocab);
        ctx_.decode(tokens, out.data(), rows > 1);
        sampler_.decoded(tokens, {out.data() + (rows - 1) * n_vocab, n_vocab});
    }
    int32_t sample(uint32_t n_top, std::vector<sample::TokenLogprob>* top) override {
        return sampler_.sample(n_top, top);
    }

    Ctx& context() { return ctx_; }

private:
    Ctx ctx_;
    sample::SequenceSampler sampler_;
    std::vector<float> scratch_;  // logits when the caller wants none kept
};

}  // namespace strata::exec
