// The forward pass over one layer range (see context.hpp), on a Backend: the driver and the
// llama-family blocks; deepseek2's are in context_mla.cpp and context_moe.cpp.
#include "context.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "exec/attention/attention_cpu.hpp"
#include "context_scratch.hpp"
#include "exec/cpu_backend.hpp"
#include "exec/memory/stage_memory.hpp"
#include "exec/ops.hpp"
#include "exec/rope.hpp"
#include "exec/sequence/sequence.hpp"
#include "gguf/model_file.hpp"
#include "quant/formats.hpp"
#include "util/error.hpp"

namespace strata::exec {

namespace {

bool any_dense_layer(const model::ModelWeights& w) {
    return std::any_of(w.layers.begin(), w.layers.end(), [](const model::LayerWeights& L) { return !L.moe; });
}

}  // namespace

Context::Context(const gguf::ModelFile& file, const ContextParams& params) : hp_(model::read_hparams(file)) {
    if (params.n_ctx < 0) fail(Status::invalid_argument, "n_ctx must be >= 0 (0: the model's context length capped at 4096)");
    if (params.n_batch <= 0) fail(Status::invalid_argument, "n_batch must be positive");
    if (params.n_threads < 0) fail(Status::invalid_argument, "n_threads must be >= 0");
    const int last = params.last_layer < 0 ? int(hp_.n_layer) : params.last_layer;
    w_ = model::bind_weights(file, hp_, params.first_layer, last);
    n_ctx_ = params.n_ctx > 0 ? params.n_ctx : std::min<int64_t>(hp_.n_ctx_train, 4096);
    n_batch_ = std::min(params.n_batch, n_ctx_);
    if (params.kda_chunk < 0) fail(Status::invalid_argument, "kda_chunk must be >= 0 (0: the step form)");
    kda_chunk_ = params.kda_chunk;
    if (params.n_seq < 1 || params.n_seq > 4096)
        fail(Status::invalid_argument, "n_seq is " + std::to_string(params.n_seq) + ", expected 1..4096");
    const int32_t n_seq = params.n_seq;
    backend_ = std::make_unique<CpuBackend>(params.n_threads);

    // Plan before allocating anything sizeable (stage_memory.hpp, shared with the plan query). The
    // cache row sizes refuse a KV type the model's attention cannot use.
    const bool dense = any_dense_layer(w_);
    s_ = std::make_unique<Scratch>();
    PlanInputs in = stage_plan_inputs(hp_, {.first_layer = w_.first_layer,
                                            .last_layer = w_.last_layer,
                                            .n_ctx = n_ctx_,
                                            .n_batch = n_batch_,
                                            .n_threads = backend_->n_threads(),
                                            .kv_type = params.kv_type});
    in.weight_bytes = w_.mapped_bytes + w_.owned_bytes;
    in.n_ctx_train = hp_.n_ctx_train;
    in.n_seq = n_seq;
    in.budget_bytes = params.memory_budget;
    plan_ = make_plan(in);
    if (!plan_.fits())
        fail(Status::out_of_memory,
             std::string("the context does not fit in the memory budget with a ") + kv_type_name(params.kv_type) +
                 " KV cache: " + plan_.describe() +
                 (plan_.max_ctx_that_fits > 0 ? "; configure a context of at most " + std::to_string(plan_.max_ctx_that_fits)
                                              : "; the weights alone do not fit"));

    // Caches: a latent row per position for each MLA layer, a fixed state for each KDA layer.
    int64_t n_mla = 0, n_kda = 0;
    for (int il = w_.first_layer; il < w_.last_layer; ++il) {
        const bool rec = hp_.is_recurrent_layer(il);
        mla_slot_.push_back(!rec && hp_.is_mla() ? n_mla++ : -1);
        kda_slot_.push_back(rec ? n_kda++ : -1);
    }
    // Each slot owns n_ctx rows of every layer's cache (cache_row).
    const int64_t rows = n_ctx_ * n_seq;
    if (n_mla > 0) latent_ = LatentCache(params.kv_type, n_mla, rows, hp_.mla.kv_lora_rank, hp_.rope.n_rot);
    if (n_kda > 0) kda_ = KdaState(n_kda, hp_.n_head, hp_.kda.head_dim, hp_.kda.conv_kernel, n_seq);
    if (!hp_.is_mla()) kv_ = KvCache(params.kv_type, int64_t(w_.layers.size()), rows, hp_.n_head_kv, hp_.head_dim);
    n_past_.assign(size_t(n_seq), 0);
    lost_.assign(size_t(n_seq), std::string());
    for_each_buffer(hp_, dense, n_batch_, n_ctx_, *s_, [](std::vector<float>& b, int64_t floats, bool) {
        b.resize(size_t(floats));
    });
    s_->chosen.resize(size_t(n_batch_ * hp_.moe.n_expert_used));
    s_->tok_seq.resize(size_t(n_batch_));
    s_->tok_pos.resize(size_t(n_batch_));
    if (hp_.moe.n_expert > 0) s_->router_state = std::make_unique<MoeRouter>(hp_.moe);
    s_->rope = std::make_unique<Rope>(hp_);
}

Context::~Context() = default;

int64_t Context::hidden_in_width() const { return hp_.n_embd * (1 + hp_.banks_before(w_.first_layer)); }
int64_t Context::hidden_out_width() const { return hp_.n_embd * (1 + hp_.banks_before(w_.last_layer)); }

int64_t Context::output_floats(int64_t n_tokens, bool all_logits) const {
    if (!w_.last_stage) return n_tokens * hidden_out_width();
    return (all_logits ? n_tokens : 1) * hp_.n_vocab;
}

void Context::check_seq(int32_t seq, const char* call) const {
    if (seq < 0 || seq >= n_seq())
        fail(Status::invalid_argument, std::string(call) + ": sequence " + std::to_string(seq) +
                                           " is not one of this context's slots 0.." + std::to_string(n_seq() - 1));
}

void Context::reset(int32_t seq) {
    check_seq(seq, "reset");
    n_past_[size_t(seq)] = 0;
    lost_[size_t(seq)].clear();
}

bool Context::can_truncate(int32_t seq, int64_t n_past) const {
    check_seq(seq, "can_truncate");
    return exec::can_truncate(n_past, n_past_[size_t(seq)], kda_.bytes() > 0);
}

void Context::truncate(int32_t seq, int64_t n_past) {
    check_seq(seq, "truncate");
    check_truncate(n_past, n_past_[size_t(seq)], kda_.bytes() > 0);
    n_past_[size_t(seq)] = n_past;
    if (n_past == 0) lost_[size_t(seq)].clear();
}

void Context::check_room(int32_t seq, int64_t n_tokens) const {
    const std::string& lost = lost_[size_t(seq)];
    if (!lost.empty()) fail(Status::invalid_argument, lost + "; reset the sequence (or truncate it to 0) first");
    check_context_room(n_tokens, n_past_[size_t(seq)], n_ctx_);
}

void Context::lay_out_one(int32_t seq, int64_t n) {
    const int64_t pos = n_past_[size_t(seq)];
    s_->runs.assign(1, SeqRun{seq, 0, n, pos});
    for (int64_t t = 0; t < n; ++t) {
        s_->tok_seq[size_t(t)] = seq;
        s_->tok_pos[size_t(t)] = pos + t;
    }
}

void Context::decode_seq(int32_t seq, std::span<const int32_t> tokens, float* out, bool all_logits) {
    if (!w_.first_stage())
        fail(Status::invalid_argument, "decode: this stage starts at layer " + std::to_string(w_.first_layer) +
                                           ", so it takes hidden states (forward_hidden), not token ids");
    check_seq(seq, "decode");
    const int64_t n = int64_t(tokens.size());
    check_room(seq, n);
    if (!out) fail(Status::invalid_argument, "decode: null output buffer");
    check_token_ids(tokens, hp_.n_vocab);
    const int64_t E = hp_.n_embd;
    for (int64_t c0 = 0; c0 < n; c0 += n_batch_) {
        const int64_t m = std::min(n_batch_, n - c0);
        for (int64_t t = 0; t < m; ++t)
            quant::dequantize_row(w_.token_embd.type, w_.token_embd.row(tokens[size_t(c0 + t)]), s_->x.data() + t * E, E);
        n_bank_ = 0;
        lay_out_one(seq, m);
        run_layers(s_->x.data(), m);
        write_output(s_->x.data(), m, c0, n, out, all_logits);
    }
}

void Context::forward_hidden(const float* hidden_in, int64_t n, float* out, bool all_logits) {
    check_room(0, n);
    if (!hidden_in || !out) fail(Status::invalid_argument, "forward_hidden: null buffer");
    const int64_t E = hp_.n_embd, W = hidden_in_width(), nb = hp_.banks_before(w_.first_layer);
    for (int64_t c0 = 0; c0 < n; c0 += n_batch_) {
        const int64_t m = std::min(n_batch_, n - c0);
        // Each row: the stream, then (attention residuals) the checkpoints banked so far.
        for (int64_t t = 0; t < m; ++t) {
            const float* row = hidden_in + (c0 + t) * W;
            std::memcpy(s_->x.data() + t * E, row, size_t(E) * sizeof(float));
            if (nb > 0)
                std::memcpy(s_->bank.data() + t * hp_.max_banks() * E, row + E, size_t(nb * E) * sizeof(float));
        }
        n_bank_ = nb;
        lay_out_one(0, m);
        run_layers(s_->x.data(), m);
        write_output(s_->x.data(), m, c0, n, out, all_logits);
    }
}

void Context::write_output(const float* x, int64_t n, int64_t first, int64_t n_total, float* out, bool all_logits) {
    const int64_t E = hp_.n_embd;
    if (!w_.last_stage) {
        const int64_t W = hidden_out_width();
        for (int64_t t = 0; t < n; ++t) {
            float* row = out + (first + t) * W;
            std::memcpy(row, x + t * E, size_t(E) * sizeof(float));
            if (n_bank_ > 0) std::memcpy(row + E, s_->bank.data() + t * hp_.max_banks() * E, size_t(n_bank_ * E) * sizeof(float));
        }
        return;
    }
    if (all_logits) {
        norm_rows(x, w_.output_norm.data(), n, E, s_->xn.data());
        backend_->matmul(w_.output, s_->xn.data(), n, out + first * hp_.n_vocab);
    } else if (first + n == n_total) {  // the chunk holding the last token
        rms_norm(x + (n - 1) * E, w_.output_norm.data(), E, hp_.rms_eps, s_->xn.data());
        backend_->matmul(w_.output, s_->xn.data(), 1, out);
    }
}

void Context::run_layers(float* x, int64_t n) {
    const int64_t E = hp_.n_embd;
    const int64_t P = s_->rope->n_pairs();
    for (const SeqRun& r : s_->runs)  // a new sequence (reset or truncate to 0)
        if (r.pos == 0 && kda_.bytes() > 0) kda_.zero(r.seq);
    last_margin_ = INFINITY;  // this micro-batch's last token (the call's last micro-batch wins)
    for (int64_t t = 0; t < n; ++t)
        s_->rope->angles(s_->tok_pos[size_t(t)], s_->cos.data() + t * P, s_->sin.data() + t * P);
    const int64_t B = hp_.attn_res_block;
    for (size_t li = 0; li < w_.layers.size(); ++li) {
        const model::LayerWeights& L = w_.layers[li];
        const int64_t il = w_.first_layer + int64_t(li);
        // Attention residuals (K3): the block input is a mix of the banked checkpoints and x;
        // every B layers x itself is banked and the stream restarts from the block's output.
        const float* in = x;
        bool banked = false;
        if (B > 0) {
            attn_res_mix(x, L.attn_res_score.data(), n, s_->mixed.data());
            in = s_->mixed.data();
            if (il % B == 0) {
                for (int64_t t = 0; t < n; ++t)
                    std::copy(x + t * E, x + (t + 1) * E, s_->bank.data() + (t * hp_.max_banks() + n_bank_) * E);
                ++n_bank_;
                banked = true;
            }
        }
        norm_rows(in, L.attn_norm.data(), n, E, s_->xn.data());
        if (L.recurrent) attention_kda(int64_t(li), n);
        else if (hp_.is_mla()) attention_mla(int64_t(li), n);
        else attention_gqa(int64_t(li), n);
        if (banked) std::copy(s_->proj.begin(), s_->proj.begin() + n * E, x);
        else add_inplace(x, s_->proj.data(), n * E);

        in = x;
        if (B > 0) {
            attn_res_mix(x, L.ffn_res_score.data(), n, s_->mixed.data());
            in = s_->mixed.data();
        }
        norm_rows(in, L.ffn_norm.data(), n, E, s_->xn.data());
        if (L.moe) ffn_moe(int64_t(li), n);
        else ffn_dense(L.w_gate, L.w_up, L.w_down, n, s_->proj.data());
        add_inplace(x, s_->proj.data(), n * E);
    }
    if (B > 0 && w_.last_stage) {  // the output norm reads a mix too
        attn_res_mix(x, w_.output_res_score.data(), n, s_->mixed.data());
        std::copy(s_->mixed.begin(), s_->mixed.begin() + n * E, x);
    }
    for (const SeqRun& r : s_->runs) n_past_[size_t(r.seq)] += r.n;
}

// SwiGLU: out = down(silu(gate xn) * up xn) for n tokens of s_->xn.
void Context::ffn_dense(const model::WeightView& gate, const model::WeightView& up, const model::WeightView& down,
                        int64_t n, float* out) {
    backend_->matmul(gate, s_->xn.data(), n, s_->gate.data());
    backend_->matmul(up, s_->xn.data(), n, s_->up.data());
    activate(s_->gate.data(), s_->up.data(), n * gate.rows);
    backend_->matmul(down, s_->gate.data(), n, out);
}

// Grouped-query attention block: q, k, v (+ biases, per-head norms), RoPE, cache, attention, wo.
void Context::attention_gqa(int64_t li, int64_t n) {
    const model::LayerWeights& L = w_.layers[size_t(li)];
    const int64_t Q = hp_.n_q(), KV = hp_.n_kv(), D = hp_.head_dim;
    const int64_t P = s_->rope->n_pairs();
    Backend& be = *backend_;
    be.matmul(L.wq, s_->xn.data(), n, s_->q.data());
    be.matmul(L.wk, s_->xn.data(), n, s_->k.data());
    be.matmul(L.wv, s_->xn.data(), n, s_->v.data());
    for (int64_t t = 0; t < n; ++t) {
        float* q = s_->q.data() + t * Q;
        float* k = s_->k.data() + t * KV;
        float* v = s_->v.data() + t * KV;
        if (!L.bq.empty()) {
            add_inplace(q, L.bq.data(), Q);
            add_inplace(k, L.bk.data(), KV);
            add_inplace(v, L.bv.data(), KV);
        }
        const float* c = s_->cos.data() + t * P;
        const float* s = s_->sin.data() + t * P;
        for (int64_t h = 0; h < hp_.n_head; ++h) {
            if (!L.q_norm.empty()) rms_norm(q + h * D, L.q_norm.data(), D, hp_.rms_eps, q + h * D);
            s_->rope->apply(q + h * D, c, s);
        }
        for (int64_t h = 0; h < hp_.n_head_kv; ++h) {
            if (!L.k_norm.empty()) rms_norm(k + h * D, L.k_norm.data(), D, hp_.rms_eps, k + h * D);
            s_->rope->apply(k + h * D, c, s);
        }
        kv_.store(li, cache_row(s_->tok_seq[size_t(t)], s_->tok_pos[size_t(t)]), k, v);
    }
    attention_scores_gqa(li, n);
    be.matmul(L.wo, s_->attn.data(), n, s_->proj.data());
}

// Causal grouped-query attention of the n new tokens against the cache (which already holds
// them). One (token, KV head) pair is one group of the attention kernels (attention_cpu.hpp): its
// G query heads read each cached key and value once, straight from the cache's storage. Each
// (token, head) is computed the same way whatever the batch and thread count, so one-token
// decode reproduces prefill exactly.
void Context::attention_scores_gqa(int64_t il, int64_t n) {
    const int64_t Q = hp_.n_q(), D = hp_.head_dim, KV = hp_.n_head_kv, G = hp_.n_gqa();
    const float scale = float(1.0 / std::sqrt(double(D)));
    const attn::RowType type = kv_.type() == KvType::q8_0 ? attn::RowType::q8_0 : attn::RowType::f16;
    const uint64_t stride = kv_.row_bytes();
    attn::attend(*backend_, n * KV, [&](int64_t job) {
        const int64_t t = job / KV, kvh = job % KV;
        // Causal, within the token's own slot: its positions 0 .. pos.
        const int64_t row0 = cache_row(s_->tok_seq[size_t(t)], 0);
        attn::Group g;
        g.q_a = s_->q.data() + t * Q + kvh * G * D;
        g.q_a_stride = D;
        g.dk_a = g.dk = g.dv = D;
        g.n_rows = G;
        g.n_keys = s_->tok_pos[size_t(t)] + 1;
        g.k = {kv_.k_head(il, row0, kvh), stride, type};
        g.v = {kv_.v_head(il, row0, kvh), stride, type};
        g.scale = scale;
        g.out = s_->attn.data() + t * Q + kvh * G * D;
        g.out_stride = D;
        return g;
    });
}

}  // namespace strata::exec
