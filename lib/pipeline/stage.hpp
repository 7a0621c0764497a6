// One pipeline stage of one sequence: a context over a layer range (exec::Context on the CPU, or
// what StageOptions::make_context makes: a GPU context for strata-worker --device cuda), plus, on
// the last stage, the sequence's sampler. Workers run one per connection; it answers the stage-control
// requests of transport/messages.hpp. Throws strata::Error (invalid_argument for a request that
// does not fit: wrong position, wrong shape, output the stage cannot give; context_overflow;
// out_of_memory at construction) and leaves the stage unchanged when it does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "exec/context/stage_context.hpp"
#include "transport/messages.hpp"

namespace strata::gguf {
class ModelFile;
}
namespace strata::sample {
class SequenceSampler;
}

namespace strata::pipeline {

struct StageOptions {
    int n_threads = 0;           // 0: hardware concurrency (CPU contexts)
    uint64_t memory_budget = 0;  // 0: free_memory()
    // Where the layers run: empty makes exec::Context (the CPU). With it come the backend name a
    // worker advertises (transport::StageInfo::backend) and how it measures its free memory
    // (empty: the host's MemAvailable).
    exec::StageContextFactory make_context;
    std::string backend = "cpu";
    std::function<uint64_t()> free_memory;
};

class Stage {
public:
    // Binds layers [c.layer_begin, c.layer_end) (checked against the model), plans memory and
    // allocates the KV cache for c.context_length tokens.
    Stage(const gguf::ModelFile& file, const transport::StageConfigure& c, const StageOptions& options);
    ~Stage();
    Stage(const Stage&) = delete;
    Stage& operator=(const Stage&) = delete;

    transport::StageReady ready() const;  // the memory plan, the range and its recurrent layers
    uint64_t kv_bytes_per_token() const;  // of the plan's KV cache, all the stage's layers (not on the wire)
    bool is_first() const;
    bool is_last() const;
    int64_t n_past() const;
    int64_t n_embd() const;
    int64_t hidden_out_width() const;  // floats per token this stage hands on (Context::hidden_out_width)

    // Runs f.hidden (f32, f16 or bf16 [n, n_embd]) through the layers at f.position (truncating
    // first when f.position < n_past; a position past n_past is an error). Answers a Tensor
    // (hidden, logits_last, logits_all), Sampled (sample) or Done (none). On the last stage the
    // tokens join the sampler's history and the last token's logits are kept for sample().
    transport::Message forward(const transport::Forward& f);
    void set_sampling(const transport::SetSampling& s);
    transport::Sampled sample(uint32_t n_top);

private:
    std::unique_ptr<exec::StageContext> ctx_;
    std::unique_ptr<sample::SequenceSampler> sampler_;  // last stage only
};

}  // namespace strata::pipeline
