// What a pipeline stage (pipeline/stage.hpp) needs of the context that runs its layer range,
// whichever device that is: exec::Context on the CPU, cuda::GpuContext on a GPU
// (cuda/runtime/gpu_stage.hpp), both wrapped by StageContextOf. The stage checks a request before it
// runs; the context keeps its own semantics (micro-batches, the recurrent truncate rule).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "context.hpp"

namespace strata::exec {

class StageContext {
public:
    virtual ~StageContext() = default;

    virtual const model::Hparams& hparams() const = 0;
    virtual const MemoryPlan& plan() const = 0;
    virtual int64_t n_ctx() const = 0;
    virtual int64_t n_past() const = 0;
    virtual int64_t n_vocab() const = 0;
    virtual int64_t n_embd() const = 0;
    virtual int first_layer() const = 0;
    virtual int last_layer() const = 0;
    virtual bool is_first_stage() const = 0;
    virtual bool is_last_stage() const = 0;
    virtual int64_t hidden_in_width() const = 0;
    virtual int64_t hidden_out_width() const = 0;
    virtual int64_t output_floats(int64_t n_tokens, bool all_logits) const = 0;
    virtual void forward_hidden(const float* hidden_in, int64_t n_tokens, float* out, bool all_logits) = 0;
    virtual void truncate(int64_t n_past) = 0;
};

// Any context type with exec::Context's interface as a StageContext.
template <class Ctx>
class StageContextOf final : public StageContext {
public:
    template <class... CtxArgs>
    explicit StageContextOf(CtxArgs&&... ctx_args) : ctx_(std::forward<CtxArgs>(ctx_args)...) {}

    const model::Hparams& hparams() const override { return ctx_.hparams(); }
    const MemoryPlan& plan() const override { return ctx_.plan(); }
    int64_t n_ctx() const override { return ctx_.n_ctx(); }
    int64_t n_past() const override { return ctx_.n_past(); }
    int64_t n_vocab() const override { return ctx_.n_vocab(); }
    int64_t n_embd() const override { return ctx_.n_embd(); }
    int first_layer() const override { return ctx_.first_layer(); }
    int last_layer() const override { return ctx_.last_layer(); }
    bool is_first_stage() const override { return ctx_.is_first_stage(); }
    bool is_last_stage() const override { return ctx_.is_last_stage(); }
    int64_t hidden_in_width() const override { return ctx_.hidden_in_width(); }
    int64_t hidden_out_width() const override { return ctx_.hidden_out_width(); }
    int64_t output_floats(int64_t n_tokens, bool all_logits) const override {
        return ctx_.output_floats(n_tokens, all_logits);
    }
    void forward_hidden(const float* hidden_in, int64_t n_tokens, float* out, bool all_logits) override {
        ctx_.forward_hidden(hidden_in, n_tokens, out, all_logits);
    }
    void truncate(int64_t n_past) override { ctx_.truncate(n_past); }

private:
    Ctx ctx_;
};

// Makes a stage's context for a layer range (params.first_layer / last_layer); throws as the
// context's constructor does (out_of_memory, unsupported, invalid_argument).
using StageContextFactory =
    std::function<std::unique_ptr<StageContext>(const gguf::ModelFile& file, const ContextParams& params)>;

inline std::unique_ptr<StageContext> make_cpu_stage_context(const gguf::ModelFile& file, const ContextParams& params) {
    return std::make_unique<StageContextOf<Context>>(file, params);
}

}  // namespace strata::exec
