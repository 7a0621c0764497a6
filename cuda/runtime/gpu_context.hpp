// GpuContext: one sequence running the forward pass over a contiguous layer range entirely on an
// NVIDIA GPU, with the semantics and API shape of exec::Context: the llama family (llama, qwen2
// with q/k/v biases, qwen3 with per-head q/k norms; grouped-query attention, dense SwiGLU),
// deepseek2 (latent attention, MoE; gpu_context_mla.cpp, gpu_context_moe.cpp), kimi-linear and
// kimi-k3 (KDA layers, gpu_context_kda.cpp; NoPE latent attention with its output gate, latent
// MoE, SiTU, attention residuals);
// the first stage starts from token ids (decode), later stages from hidden states
// (forward_hidden); the last stage writes logits (of the last token, or of every token with
// all_logits), other stages the hidden state of every token; inputs longer than n_batch run in
// micro-batches. Errors leave the context unchanged (checked before anything runs).
//
// Weights are uploaded once (gpu_weights.hpp); the KV cache (f16 or q8_0, exec::KvType), the RoPE
// cos/sin tables (exec::Rope's angles, computed on the host) and the activations of one
// micro-batch live on the device; the memory plan (exec/memory/device_plan.hpp) is checked against the
// budget (ContextParams::memory_budget, else the device's free memory) before any allocation.
// A one-token step is captured once as a CUDA graph and replayed: the token id or hidden state
// and n_past are copied into device buffers from pinned host memory before each replay, and the
// output is copied back into pinned host memory. Multi-token inputs run the kernels directly
// (the product chooser may time candidates on the first sight of a shape, which must never
// happen inside a capture).
//
// KDA layers keep their recurrent state on the device; like the CPU's, it cannot drop positions
// (truncate to 0 or to n_past only), and a call that fails after it started leaves the sequence
// lost until reset. MoE layers whose experts are IQ1_S route and multiply on the device; other
// expert types route on the host (one device-to-host copy of the router logits per layer), and
// then one-token steps are not captured as graphs (exec::gpu_host_routing_reason says why).
// A model the kernels cannot take is refused naming why (exec::check_gpu_supports); so is a q8_0
// cache with latent attention (the GPU's latent cache is f16).
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_forward.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "exec/context/context.hpp"
#include "exec/memory/memory_plan.hpp"
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
    // As exec::Context: n_embd, plus with attention residuals (K3) the checkpoints banked before
    // the stage's first / after its last layer.
    int64_t hidden_in_width() const { return hp_.n_embd * (1 + hp_.banks_before(first_layer_)); }
    int64_t hidden_out_width() const { return hp_.n_embd * (1 + hp_.banks_before(last_layer_)); }
    int64_t output_floats(int64_t n_tokens, bool all_logits) const;

    // As exec::Context::decode / forward_hidden.
    void decode(std::span<const int32_t> tokens, float* out, bool all_logits = false);
    void forward_hidden(const float* hidden_in, int64_t n_tokens, float* out, bool all_logits = false);

    void reset() {
        n_past_ = 0;
        lost_.clear();
    }
    // Any position within [0, n_past()] without recurrent layers; with them only 0 and n_past().
    bool can_truncate(int64_t n_past) const;
    void truncate(int64_t n_past);  // drop positions >= n_past (see can_truncate)
    void mark_lost(const std::string& why) { lost_ = why; }

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
    // The blocks, on m tokens: d.xn (normalized input) -> d.proj (the block's output).
    void attention_gqa(size_t li, int m);
    void attention_mla(size_t li, int m);  // gpu_context_mla.cpp
    void attention_kda(size_t li, int m);  // gpu_context_kda.cpp
    void ffn_dense(const DeviceMatrix& gate, const DeviceMatrix& up, const DeviceMatrix& down, int m, float* out);
    void ffn_moe(size_t li, int m);        // gpu_context_moe.cpp
    void ffn_moe_device(size_t li, const float* in);
    void ffn_moe_host(size_t li, int m, const float* in);
    // K3 attention residuals: d.mixed = the mix of the banked checkpoints and x scored with w.
    void residual_mix(const float* w, int m);
    void replay(Input in, Output out);  // one token through the captured graph (captured on first use)
    void fetch(const float* src, int64_t count, float* dst);

    model::Hparams hp_;
    exec::MemoryPlan plan_;
    int first_layer_ = 0, last_layer_ = 0;
    bool last_stage_ = false;
    bool graphs_ = true;
    bool recurrent_ = false;  // the stage has KDA layers
    int64_t kda_chunk_ = 0;   // > 0: multi-token KDA inputs run the chunked form (chunks of this many)
    int64_t n_bank_ = 0;      // attention residuals: checkpoints banked so far in this micro-batch
    std::string lost_;
    int64_t n_ctx_ = 0, n_batch_ = 0, n_past_ = 0;
    int64_t graph_replays_ = 0;
    std::string graph_disabled_;
    std::unique_ptr<Device> d_;
};

}  // namespace strata::cuda
