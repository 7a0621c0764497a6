// Context: one sequence running the forward pass over a contiguous layer range (llama family:
// grouped-query attention and SwiGLU; deepseek2: latent attention and MoE, context_mla.cpp and
// context_moe.cpp).
//
//   auto file = gguf::ModelFile::open({"model.gguf"});
//   exec::Context ctx(*file, {.n_ctx = 2048, .n_threads = 8});
//   std::vector<float> logits(ctx.n_vocab());
//   ctx.decode(prompt, logits.data());          // prefill
//   ctx.decode({&next, 1}, logits.data());      // continues at n_past
//
// Stages of a pipeline (first_layer/last_layer): the first stage starts from token ids (decode),
// later stages from hidden states (forward_hidden). What a call writes to `out`:
//   the stage ends at the last layer: logits, of the last token (n_vocab floats) or of every
//   token (n * n_vocab) when all_logits;
//   otherwise: the hidden states of every token (n * hidden_out_width()), whatever all_logits says.
// output_floats() says how many. Errors leave the context unchanged: bad token ids, context
// overflow and calls to the wrong stage throw Error(invalid_argument) before anything runs.
//
// Several sequences (ContextParams::n_seq slots, continuous batching): each slot has its own
// cache of n_ctx positions (or recurrent state), n_past and lost flag; the calls without a slot
// address slot 0. decode_batch runs the next tokens of several slots in one pass: their tokens
// are laid out together and go through every matmul together (each weight read once per
// micro-batch), while RoPE, cache writes and attention use each token's own (slot, position).
// Every per-token computation is the same code whatever shares the pass, so a slot's logits are
// bit-identical to decoding it alone.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "exec/backend.hpp"
#include "exec/sequence/batch_entry.hpp"
#include "exec/kda/kda_state.hpp"
#include "exec/attention/kv_cache.hpp"
#include "exec/attention/latent_cache.hpp"
#include "exec/memory/memory_plan.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"

namespace strata::gguf {
class ModelFile;
}

namespace strata::exec {

struct ContextParams {
    int64_t n_ctx = 0;           // 0: the model's context_length capped at 4096
    int n_threads = 0;           // 0: hardware concurrency
    KvType kv_type = KvType::f16;
    int first_layer = 0;
    int last_layer = -1;         // -1: all layers
    uint64_t memory_budget = 0;  // 0: MemAvailable
    int64_t n_batch = 512;       // micro-batch: longer inputs run in chunks of this many tokens
    int64_t kda_chunk = 0;       // KDA layers: > 0 runs multi-token inputs in the chunked form with
                                 // chunks of this many tokens; 0: the step form everywhere
    int32_t n_seq = 1;           // sequence slots, each with its own cache of n_ctx positions
};

class Context {
public:
    // Reads hparams, binds the layer range's weights, plans memory (throws out_of_memory when the
    // plan exceeds the budget), then allocates the KV cache and scratch.
    Context(const gguf::ModelFile& file, const ContextParams& params);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    const model::Hparams& hparams() const { return hp_; }
    const MemoryPlan& plan() const { return plan_; }
    int64_t n_ctx() const { return n_ctx_; }  // of each slot
    int32_t n_seq() const { return int32_t(n_past_.size()); }
    int64_t n_past() const { return n_past_[0]; }
    int64_t n_past(int32_t seq) const { return n_past_.at(size_t(seq)); }
    int64_t n_vocab() const { return hp_.n_vocab; }
    int64_t n_embd() const { return hp_.n_embd; }
    int first_layer() const { return w_.first_layer; }
    int last_layer() const { return w_.last_layer; }
    bool is_first_stage() const { return w_.first_stage(); }
    bool is_last_stage() const { return w_.last_stage; }
    int n_threads() const { return backend_->n_threads(); }
    int64_t output_floats(int64_t n_tokens, bool all_logits) const;
    // Floats per token of the hidden states a stage takes (forward_hidden) and hands on (a stage
    // that does not end the model): n_embd, plus with attention residuals (K3) the checkpoints
    // banked before the stage's first / after its last layer, n_embd each, after the stream.
    int64_t hidden_in_width() const;
    int64_t hidden_out_width() const;

    // First stage only. Runs tokens at positions n_past..n_past+n-1 and appends them to the cache.
    void decode(std::span<const int32_t> tokens, float* out, bool all_logits = false) {
        decode_seq(0, tokens, out, all_logits);
    }
    // The same for slot seq (0 <= seq < n_seq, else Error(invalid_argument)).
    void decode_seq(int32_t seq, std::span<const int32_t> tokens, float* out, bool all_logits = false);
    // A context over the whole model only. Runs every entry at its slot's n_past in one pass; out
    // gets entry i's last-token logits at out + i * n_vocab. Every entry is checked first (slot in
    // range and at most once, tokens present and valid, room, not lost): Error(invalid_argument)
    // naming the entry, nothing run in any slot.
    void decode_batch(std::span<const BatchEntry> entries, float* out);
    // Any stage (later stages must use it): hidden states in (n_tokens * n_embd), e.g. from the
    // previous stage's output.
    void forward_hidden(const float* hidden_in, int64_t n_tokens, float* out, bool all_logits = false);

    void reset() { reset(0); }
    void reset(int32_t seq);
    // Whether truncate(n_past) can succeed: any position within [0, n_past()] without recurrent
    // layers; with them only 0 (restart) and n_past() (nothing dropped).
    bool can_truncate(int64_t n_past) const { return can_truncate(0, n_past); }
    bool can_truncate(int32_t seq, int64_t n_past) const;
    // After a failed call that cannot be undone (a recurrent state that cannot roll back): every
    // later call throws Error(invalid_argument) with `why` until reset() or truncate(0).
    void mark_lost(const std::string& why) { lost_[0] = why; }
    struct Scratch;  // context_scratch.hpp
    void truncate(int64_t n_past) { truncate(0, n_past); }  // drop positions >= n_past; 0 <= n_past <= n_past()
    void truncate(int32_t seq, int64_t n_past);

    Backend& backend() { return *backend_; }

    // The routing margin (deepseek2.md) of the last token of the last decode / forward_hidden /
    // decode_batch call: the smallest over this stage's MoE layers (+inf without them). Tests
    // judge logits whose routing was a near tie apart (DESIGN.md, "Comparing logits").
    float last_token_routing_margin() const { return last_margin_; }

private:
    void check_seq(int32_t seq, const char* call) const;
    void check_room(int32_t seq, int64_t n_tokens) const;
    // The micro-batch's tokens: n tokens of slot seq at its n_past (Scratch::runs and the
    // per-token slot and position).
    void lay_out_one(int32_t seq, int64_t n);
    // Runs n tokens of hidden state x (n * n_embd, modified) through the layers, each at the
    // (slot, position) the micro-batch's layout gives it; then advances each slot's n_past.
    void run_layers(float* x, int64_t n);
    // The cache row of position pos of slot seq (slot-major: each slot owns n_ctx rows per layer).
    int64_t cache_row(int32_t seq, int64_t pos) const { return int64_t(seq) * n_ctx_ + pos; }
    // Attention blocks: s_->xn (normalized input) -> s_->proj (the block's output), cache updated.
    void attention_gqa(int64_t li, int64_t n);
    void attention_scores_gqa(int64_t li, int64_t n);
    void attention_mla(int64_t li, int64_t n);
    void attention_scores_mla(int64_t li, int64_t n);
    void attention_kda(int64_t li, int64_t n);      // context_kda.cpp
    void kda_heads(int64_t li, int32_t seq, int64_t first, int64_t n);  // one slot's tokens [first, first + n)
    // K3 attention residuals (context_kimi.cpp): x replaced per token by the softmax mix of the
    // banked checkpoints and x itself, scored with w.
    void attn_res_mix(const float* x, const float* w, int64_t n, float* out);
    // fn(i) for i in [0, n), split over the backend's threads when n >= 8 and there are two or more.
    void for_rows(int64_t n, const std::function<void(int64_t)>& fn) const;
    // rms_norm of n rows of width E (in + t * E to out + t * E), rows split over the backend's
    // threads for a prefill batch (for_rows); each row is computed the same way either way.
    void norm_rows(const float* in, const float* w, int64_t n, int64_t E, float* out) const;
    // The FFN activation in place: SwiGLU, or SiTU where the model gives its betas (K3).
    void activate(float* gate, const float* up, int64_t n) const;
    // FFN blocks: s_->xn -> s_->proj.
    void ffn_dense(const model::WeightView& gate, const model::WeightView& up, const model::WeightView& down, int64_t n,
                   float* out);
    void ffn_moe(int64_t li, int64_t n);
    void write_output(const float* x, int64_t n, int64_t first_token, int64_t n_total, float* out,
                      bool all_logits);

    model::Hparams hp_;
    model::ModelWeights w_;
    std::unique_ptr<Backend> backend_;
    KvCache kv_;          // gqa
    LatentCache latent_;  // mla
    KdaState kda_;        // recurrent (KDA) layers
    std::vector<int64_t> mla_slot_, kda_slot_;  // stage layer -> its slot in latent_ / kda_ (-1: none)
    int64_t n_bank_ = 0;  // attention residuals: checkpoints banked so far in this micro-batch
    int64_t kda_chunk_ = 0;
    float last_margin_ = INFINITY;
    std::vector<std::string> lost_;  // per slot: why it is lost ("" when usable)
    MemoryPlan plan_;
    int64_t n_ctx_ = 0;
    int64_t n_batch_ = 0;
    std::vector<int64_t> n_past_;  // per slot
    std::unique_ptr<Scratch> s_;
};

}  // namespace strata::exec
