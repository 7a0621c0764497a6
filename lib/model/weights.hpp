// Weight binding: the tensors of a contiguous layer range [first, last) as views into the mapped
// file, each checked for presence, type and shape. Shapes are written as ggml stores them,
// innermost (row length) first: [cols, rows].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/hparams.hpp"

namespace strata::gguf {
class ModelFile;
}

namespace strata::model {

// A 2-D weight matrix (rows of `cols` elements, ggml type `type`) or a vector (rows == 1); or a
// stack of n_mats such matrices (a 3-D tensor: experts, per-head projections) mat_stride bytes
// apart, of which mat(i) is one.
struct WeightView {
    std::string name;
    uint32_t type = 0;
    int64_t cols = 0;          // ne[0]: elements per row
    int64_t rows = 0;          // ne[1]
    uint64_t row_bytes = 0;
    const uint8_t* data = nullptr;  // into the mapping (or a buffer the weights own)
    uint64_t nbytes = 0;
    int64_t n_mats = 1;        // ne[2] of a stack
    uint64_t mat_stride = 0;   // bytes from one matrix of the stack to the next
    bool present() const { return data != nullptr; }
    const uint8_t* row(int64_t r) const { return data + uint64_t(r) * row_bytes; }
    // Matrix i of a stack (0 <= i < n_mats), as a plain 2-D view.
    WeightView mat(int64_t i) const {
        WeightView m = *this;
        m.data = data + uint64_t(i) * mat_stride;
        m.n_mats = 1;
        m.nbytes = uint64_t(rows) * row_bytes;
        return m;
    }
};

struct LayerWeights {
    // norms and biases are small: kept as float32 copies (any stored float/quant type accepted)
    std::vector<float> attn_norm;  // [n_embd]
    WeightView wq;                 // [n_embd, n_q] (mla: when there is no low-rank query)
    WeightView wk;                 // [n_embd, n_kv]
    WeightView wv;                 // [n_embd, n_kv]
    WeightView wo;                 // [n_q, n_embd]
    std::vector<float> bq, bk, bv; // qwen2: [n_q], [n_kv], [n_kv]; empty otherwise
    std::vector<float> q_norm;     // qwen3: [head_dim]; empty otherwise
    std::vector<float> k_norm;     // qwen3: [head_dim]
    std::vector<float> ffn_norm;   // [n_embd]
    WeightView w_gate;             // [n_embd, n_ff] (dense layers)
    WeightView w_up;               // [n_embd, n_ff]
    WeightView w_down;             // [n_ff, n_embd]

    // Multi-head latent attention (deepseek2.md). C = kv_lora_rank, R = n_rot.
    WeightView wq_a;               // [n_embd, q_lora] (q_lora_rank > 0)
    std::vector<float> q_a_norm;   // [q_lora]
    WeightView wq_b;               // [q_lora, n_q]
    WeightView wkv_a;              // [n_embd, C + R]: latent, then the rope key
    std::vector<float> kv_a_norm;  // [C]
    WeightView wk_b;               // stack of n_head [qk_nope, C]: q_nope -> the latent space
    WeightView wv_b;               // stack of n_head [C, v_head_dim]: latent -> value
    std::vector<uint8_t> k_b_owned;  // legacy files (attn_kv_b): wk_b built at load, float32

    WeightView attn_gate;          // K3 MLA output gate [n_embd, n_head * v_head_dim] (optional)

    // Kimi Delta Attention (recurrent layers; kimi_linear.md). D = n_head * dk; wq/wk/wv/wo above.
    bool recurrent = false;
    std::vector<float> conv_q, conv_k, conv_v;  // [D][K]: channel c's taps at c*K .. c*K+K-1
    WeightView f_a;                // [n_embd, dk] decay gate, low rank
    WeightView f_b;                // [dk, D]
    std::vector<float> dt_bias;    // [D]
    std::vector<float> ssm_a;      // [n_head]: -exp(A_log) as stored
    WeightView w_beta;             // [n_embd, n_head]
    WeightView g_a, g_b;           // Kimi-Linear output gate [n_embd, dk], [dk, D]
    WeightView g_full;             // K3 output gate [n_embd, D]
    std::vector<float> ssm_norm;   // [dk], shared by the heads

    // K3 attention residuals: score vectors [n_embd] (attn_res.block_size > 0)
    std::vector<float> attn_res_score, ffn_res_score;

    // Mixture of experts (layers from n_dense_lead on).
    bool moe = false;
    WeightView gate_inp;           // [n_embd, n_expert] router
    std::vector<float> exp_probs_b;  // [n_expert] selection bias; empty if absent
    WeightView gate_exps, up_exps; // stacks of n_expert [n_embd, n_ff_exp]
    WeightView down_exps;          // stack of n_expert [n_ff_exp, n_embd]
    WeightView gate_shexp, up_shexp;  // [n_embd, n_ff_exp * n_shared] (n_shared > 0)
    WeightView down_shexp;         // [n_ff_exp * n_shared, n_embd]
    WeightView routed_down;        // K3 latent experts: [n_embd, L]
    WeightView routed_up;          // [L, n_embd]
    std::vector<float> routed_norm;  // [L], optional
};

struct ModelWeights {
    int first_layer = 0;  // the range [first_layer, last_layer) of this stage
    int last_layer = 0;
    bool first_stage() const { return first_layer == 0; }
    bool last_stage = false;
    WeightView token_embd;          // [n_embd, n_vocab]; first stage (and last, when tied)
    std::vector<LayerWeights> layers;  // last_layer - first_layer entries
    std::vector<float> output_norm; // [n_embd]; last stage
    WeightView output;              // [n_embd, n_vocab]; last stage (token_embd when tied)
    bool tied_output = false;
    std::vector<float> output_res_score;  // K3 attention residuals, last stage
    uint64_t mapped_bytes = 0;      // bytes of every distinct tensor bound (what the stage touches)
    uint64_t owned_bytes = 0;       // bytes built at load (legacy MLA k_b), held in memory
};

// Binds layers [first, last) (0 <= first < last <= n_layer), plus token_embd when first == 0 and
// output_norm/output when last == n_layer. Throws Error(format) naming a missing or mis-shaped
// tensor, Error(unsupported) for a tensor type the CPU cannot multiply, Error(invalid_argument)
// for a bad range.
ModelWeights bind_weights(const gguf::ModelFile& file, const Hparams& hp, int first, int last);

// Bytes bind_weights builds and holds in memory for layer il beyond the mapped tensors (the
// legacy MLA form's k_b, float32: weights_deepseek2.cpp); 0 for every other layer and form.
uint64_t owned_layer_bytes(const gguf::ModelFile& file, const Hparams& hp, int il);

}  // namespace strata::model
