#include "gpu_sequence.hpp"

#include <vector>

#include "gpu_context.hpp"

namespace strata::cuda {

namespace {

class GpuSequence final : public exec::Sequence {
public:
    GpuSequence(const gguf::ModelFile& file, const exec::ContextParams& params, const sample::SamplerParams& sampling,
                const GpuOptions& options)
        : ctx_(file, params, options), sampler_(sampling) {}

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
    void decode(std::span<const int32_t> tokens, bool all_logits, std::vector<float>* logits) override {
        exec::check_decode(tokens, ctx_.n_vocab(), ctx_.n_past(), ctx_.n_ctx());
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

private:
    GpuContext ctx_;
    sample::SequenceSampler sampler_;
    std::vector<float> scratch_;  // logits when the caller wants none kept
};

}  // namespace

std::unique_ptr<exec::Sequence> make_gpu_sequence(const gguf::ModelFile& file, const exec::ContextParams& params,
                                                  const sample::SamplerParams& sampling,
                                                  const std::function<void(uint64_t, uint64_t)>& progress) {
    GpuOptions options;
    options.progress = progress;
    return std::make_unique<GpuSequence>(file, params, sampling, options);
}

}  // namespace strata::cuda
