// GpuContext: one sequence running the llama-family forward pass (llama, qwen2 with q/k/v
// biases, qwen3 with per-head q/k norms; grouped-query attention, dense SwiGLU) over a contiguous
// layer range entirely on an NVIDIA GPU, with the semantics and API shape of exec::Context:
// the first stage starts from token ids (decode), later stages from hidden states
// (forward_hidden); the last stage writes logits (of the last token, or of every token with
// all_logits), other stages the hidden state of every token; inputs longer than n_batch run in
// micro-batches. Errors leave the context unchanged (checked before anything runs).
//
// Weights are uploaded once (gpu_weights.hpp); the KV cache (f16 or q8_0, exec::KvType), the RoPE
// cos/sin tables (exec::Rope's angles, computed on the host) and the activations of one
// micro-batch live on the device; the memory plan (exec/device_plan.hpp) is checked against the
// budget (ContextParams::memory_budget, else the device's free memory) before any allocation.
// A one-token step is captured once as a CUDA graph and replayed: the token id or hidden state
// and n_past are copied into device buffers from pinned host memory before each replay, and the
// output is copied back into pinned host memory. Multi-token inputs run the kernels directly
// (the product chooser may time candidates on the first sight of a shape, which must never
// happen inside a capture).
//
// Other architectures (deepseek2, kimi-*) are refused with Error(unsupported): they run on the
// CPU backend for now.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_forward.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "exec/context.hpp"
#include "exec/memory_plan.hpp"
#include "gpu_weights.hpp"
#include "model/hparams.hpp"

namespace strata::gguf {
class ModelFile;
}

namespace strata::cuda {

struct GpuOptions {
    bool cuda_graphs = true;  // false: one-token steps run the kernels directly (tests compare both)
    UploadProgress progress;  // the weight upload (done_bytes, total_bytes)
};

// "" when a CUDA device can be used; otherwise why not (the CUDA runtime's reason).
std::string gpu_unavailable_reason();

class GpuContext {
public:
    // Reads hparams, refuses what the GPU does not run, binds the layer range's weights, plans
    // device memory (Error(out_of_memory) naming the largest context that fits), then uploads the
    // weights and allocates the cache and scratch. Error(unsupported) without a usable GPU.
    GpuContext(const gguf::ModelFile& file, const exec::ContextParams& params, const GpuOptions& options = {});
    ~GpuContext();
    GpuContext(const GpuContext&) = delete;
    GpuContext& operator=(const GpuContext&) = delete;

    const model::Hparams& hparams() const { return hp_; }
    const exec::MemoryPlan& plan() const { return plan_; }
    int64_t n_ctx() const { return n_ctx_; }
    int64_t n_past() const { return n_past_; }
    int64_t n_vocab() const { return hp_.n_vocab; }
    int64_t n_embd() const { return hp_.n_embd; }
    int64_t n_batch() const { return n_batch_; }
    int first_layer() const { return first_layer_; }
    int last_layer() const { return last_layer_; }
    bool is_first_stage() const { return first_layer_ == 0; }
    bool is_last_stage() const { return last_stage_; }
    int64_t hidden_in_width() const { return hp_.n_embd; }
    int64_t hidden_out_width() const { return hp_.n_embd; }
    int64_t output_floats(int64_t n_tokens, bool all_logits) const;

    // As exec::Context::decode / forward_hidden.
    void decode(std::span<const int32_t> tokens, float* out, bool all_logits = false);
    void forward_hidden(const float* hidden_in, int64_t n_tokens, float* out, bool all_logits = false);

    void reset() { n_past_ = 0; }
    bool can_truncate(int64_t n_past) const { return n_past >= 0 && n_past <= n_past_; }
    void truncate(int64_t n_past);  // drop positions >= n_past; 0 <= n_past <= n_past()

    // How many one-token steps replayed a captured graph (tests check graphs really ran).
    int64_t graph_replays() const { return graph_replays_; }
    // Why graphs were turned off after a failed capture ("" while they are on or were never asked).
    const std::string& graph_disabled_reason() const { return graph_disabled_; }

    struct Device;  // the device state (gpu_context.cpp)

private:
    enum class Input { tokens, hidden };
    enum class Output { none, last_logits, all_logits, hidden };
    void check_room(int64_t n_tokens) const;
    void run(const int32_t* tokens, const float* hidden, int64_t n, float* out, bool all_logits);
    void run_batches(const int32_t* tokens, const float* hidden, int64_t n, float* out, bool all_logits);
    // Enqueues the forward pass of m tokens whose input already sits in the device buffers, and
    // the last token's logits for Output::last_logits.
    void enqueue(int m, Input in, Output out);
    void enqueue_layer(size_t li, int m);
    void replay(Input in, Output out);
    void fetch(const float* src, int64_t count, float* dst);  // one token through the captured graph (captured on first use)

    model::Hparams hp_;
    exec::MemoryPlan plan_;
    int first_layer_ = 0, last_layer_ = 0;
    bool last_stage_ = false;
    bool graphs_ = true;
    int64_t n_ctx_ = 0, n_batch_ = 0, n_past_ = 0;
    int64_t graph_replays_ = 0;
    std::string graph_disabled_;
    std::unique_ptr<Device> d_;
};

}  // namespace strata::cuda
