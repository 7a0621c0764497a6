// Hyperparameters of a model as llama.cpp writes them in GGUF metadata, read and checked in one
// place (read_hparams): the llama family (llama, qwen2, qwen3) and deepseek2 (Kimi K2: MLA
// attention, MoE; lib/model/deepseek2.md). Everything the forward pass needs to know about the
// architecture is here; the per-architecture differences are in ArchTraits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::gguf {
class ModelFile;
}

namespace strata::model {

enum class RopeOrder {
    normal,  // llama: rotate adjacent pairs (x[2i], x[2i+1])
    neox,    // qwen2/qwen3: rotate halves (x[i], x[i + n_rot/2])
};

enum class RopeScaling { none, linear, yarn };

enum class AttentionKind {
    gqa,  // grouped-query attention, K and V cached per KV head
    mla,  // multi-head latent attention (deepseek2): the cache holds a latent and a rope key per token
    kda_mla,  // kimi-linear / kimi-k3: KDA (recurrent) layers interleaved with MLA layers
};

enum class ExpertGating { softmax, sigmoid };

// What differs between the llama-family architectures (one definition per arch_*.cpp file).
struct ArchTraits {
    const char* name;         // general.architecture value and key prefix
    RopeOrder rope_order;
    bool qkv_bias;            // qwen2: blk.N.attn_{q,k,v}.bias
    bool qk_norm;             // qwen3: blk.N.attn_{q,k}_norm.weight, per-head RMSNorm before RoPE
    AttentionKind attention = AttentionKind::gqa;
};

ArchTraits llama_traits();
ArchTraits qwen2_traits();
ArchTraits qwen3_traits();
ArchTraits deepseek2_traits();
ArchTraits kimi_linear_traits();
ArchTraits kimi_k3_traits();

// The traits for a general.architecture value; throws Error(unsupported) naming it otherwise.
ArchTraits find_arch(const std::string& name);

struct RopeParams {
    int64_t n_rot = 0;            // rotated dimensions per head (rope.dimension_count), even, <= head_dim
    double freq_base = 10000.0;   // rope.freq_base
    RopeScaling scaling = RopeScaling::none;
    double factor = 1.0;          // rope.scaling.factor (positions are divided by it: freq_scale = 1/factor)
    int64_t n_ctx_orig = 0;       // rope.scaling.original_context_length (default: context_length)
    // YaRN (llama.cpp rope_yarn); ext_factor 1 for yarn, 0 otherwise unless the file says.
    double ext_factor = 0.0;
    double attn_factor = 1.0;
    double beta_fast = 32.0;
    double beta_slow = 1.0;
    double yarn_log_mul = 0.0;    // rope.scaling.yarn_log_multiplier (deepseek2: attention temperature)
    // deepseek2: the rotation has magnitude 1 and the YaRN temperature goes into the attention
    // scale instead (see deepseek2.md); the llama family keeps ggml's magnitude.
    bool unit_magnitude = false;
};

// Multi-head latent attention (deepseek2). Query heads are qk_nope + n_rot wide (n_rot: the
// rotated part, rope.dimension_count), values v_head_dim; the cache holds kv_lora + n_rot values.
struct MlaParams {
    int64_t q_lora_rank = 0;    // 0: a full attn_q instead of the low-rank pair
    int64_t kv_lora_rank = 0;   // the latent width C
    int64_t qk_nope = 0;        // the non-rotated part of a query/key head
    int64_t v_head_dim = 0;
    double kq_scale = 0.0;      // mscale^2 / sqrt(qk_nope + n_rot)
    bool rotate = true;         // false (Kimi): the n_rot part of each head is used unrotated
};

// Kimi Delta Attention (lib/model/kimi_linear.md): H heads of dk channels, a causal conv of
// conv_kernel taps on q, k, v, a per-channel decay gate and a dk x dk state per head.
struct KdaParams {
    int64_t head_dim = 0;       // dk (= dv)
    int64_t conv_kernel = 0;    // K
    bool lower_bound_gate = false;  // K3: g = lb * sigmoid(exp(A_log) z); else a * softplus(z)
    double gate_lower_bound = 0.0;
    bool full_rank_gate = false;    // K3: ssm_g [E, D]; Kimi-Linear: ssm_g_a / ssm_g_b
};

// Mixture of experts (deepseek2). Layers below n_dense_lead have a dense FFN of n_ff.
struct MoeParams {
    int64_t n_expert = 0;       // 0: no MoE layers
    int64_t n_expert_used = 0;
    int64_t n_expert_shared = 0;
    int64_t n_ff_exp = 0;
    int64_t n_dense_lead = 0;
    int64_t n_group = 0;        // grouped top-k when 1 < n_group and n_group_used < n_group
    int64_t n_group_used = 0;
    ExpertGating gating = ExpertGating::softmax;
    bool weights_norm = false;
    double weights_scale = 0.0; // 0: not scaled
    bool grouped() const { return n_group > 1 && n_group_used < n_group; }
    int64_t latent = 0;         // K3: routed experts run at this width between down/up projections
    double situ_beta = 0.0;     // K3: SiTU instead of SwiGLU when > 0 (every FFN of the model)
    double situ_linear_beta = 0.0;  // <= 0: the up branch is used as is
};

struct Hparams {
    ArchTraits arch{};
    int64_t n_ctx_train = 0;   // context_length
    int64_t n_embd = 0;        // embedding_length
    int64_t n_layer = 0;       // block_count
    int64_t n_ff = 0;          // feed_forward_length
    int64_t n_head = 0;        // attention.head_count
    int64_t n_head_kv = 0;     // attention.head_count_kv (default n_head)
    int64_t head_dim = 0;      // attention.key_length == value_length (default n_embd / n_head)
    int64_t n_vocab = 0;       // token_embd.weight ne[1]
    double rms_eps = 1e-5;     // attention.layer_norm_rms_epsilon
    RopeParams rope;
    MlaParams mla;             // attention == mla only
    MoeParams moe;             // moe.n_expert > 0 only
    KdaParams kda;             // kda_mla only
    std::vector<uint8_t> recurrent;  // kda_mla: per layer, 1 for a KDA layer (head_count_kv 0)
    int64_t attn_res_block = 0;      // K3 attention residuals: bank every this many layers (0: off)

    // Latent attention in every attention layer that is not recurrent.
    bool is_mla() const { return arch.attention == AttentionKind::mla || arch.attention == AttentionKind::kda_mla; }
    bool is_recurrent_layer(int64_t il) const { return !recurrent.empty() && recurrent[size_t(il)] != 0; }
    int64_t kda_width() const { return n_head * kda.head_dim; }  // D
    bool is_moe_layer(int64_t il) const { return moe.n_expert > 0 && il >= moe.n_dense_lead; }
    // K3 attention residuals: the checkpoints banked below `layer` (layers 0, B, 2B, ... bank
    // theirs), and the most a sequence ever holds (0 without attention residuals).
    int64_t banks_before(int64_t layer) const { return attn_res_block > 0 ? (layer + attn_res_block - 1) / attn_res_block : 0; }
    int64_t max_banks() const { return banks_before(n_layer); }
    // gqa: query / key / value widths; mla: the query width is n_head * (qk_nope + n_rot).
    int64_t n_q() const { return is_mla() ? n_head * (mla.qk_nope + rope.n_rot) : n_head * head_dim; }
    int64_t n_kv() const { return n_head_kv * head_dim; } // gqa key / value width
    int64_t n_gqa() const { return n_head / n_head_kv; }  // query heads per KV head
    int64_t n_attn_out() const { return is_mla() ? n_head * mla.v_head_dim : n_head * head_dim; }  // attn_output row
};

// Reads and validates general.architecture and the {arch}.* keys. Throws Error(unsupported) for an
// unknown architecture or an unsupported feature (per-layer arrays, key_length != value_length,
// unknown rope scaling), Error(format) for missing or inconsistent keys (the message names them).
Hparams read_hparams(const gguf::ModelFile& file);

// The parts of read_hparams, for the architecture readers (prefix: "{arch}."). hp.n_head and
// hp.n_ctx_train are read before these run.
void read_gqa_attention(const gguf::ModelFile& file, const std::string& prefix, Hparams& hp);
void read_rope(const gguf::ModelFile& file, const std::string& prefix, Hparams& hp);  // n_rot <= hp.head_dim
void read_vocab_size(const gguf::ModelFile& file, Hparams& hp);
// deepseek2 (hparams_deepseek2.cpp): MLA and MoE keys, the YaRN attention scale.
void read_deepseek2_hparams(const gguf::ModelFile& file, const std::string& prefix, Hparams& hp);
// kimi-linear / kimi-k3 (hparams_kimi.cpp): the layer pattern, KDA, NoPE MLA, MoE, K3 extras.
void read_kimi_hparams(const gguf::ModelFile& file, const std::string& prefix, Hparams& hp);
// The parts shared by deepseek2 and the Kimi architectures (hparams_deepseek2.cpp).
void read_mla_widths(const gguf::ModelFile& file, const std::string& prefix, Hparams& hp);
void read_moe_routing(const gguf::ModelFile& file, const std::string& prefix, Hparams& hp);
[[noreturn]] void bad_key(const std::string& key, const std::string& why);  // Error(format)
int64_t positive_key(const gguf::ModelFile& file, const std::string& key, std::optional<int64_t> fallback);

}  // namespace strata::model
