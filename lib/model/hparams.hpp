// Hyperparameters of a llama-family model (llama, qwen2, qwen3) as llama.cpp writes them in GGUF
// metadata, read and checked in one place (read_hparams). Everything the forward pass needs to know
// about the architecture is here; the per-architecture differences are in ArchTraits.
#pragma once

#include <cstdint>
#include <string>

namespace strata::gguf {
class ModelFile;
}

namespace strata::model {

enum class RopeOrder {
    normal,  // llama: rotate adjacent pairs (x[2i], x[2i+1])
    neox,    // qwen2/qwen3: rotate halves (x[i], x[i + n_rot/2])
};

enum class RopeScaling { none, linear, yarn };

// What differs between the llama-family architectures (one definition per arch_*.cpp file).
struct ArchTraits {
    const char* name;         // general.architecture value and key prefix
    RopeOrder rope_order;
    bool qkv_bias;            // qwen2: blk.N.attn_{q,k,v}.bias
    bool qk_norm;             // qwen3: blk.N.attn_{q,k}_norm.weight, per-head RMSNorm before RoPE
};

ArchTraits llama_traits();
ArchTraits qwen2_traits();
ArchTraits qwen3_traits();

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

    int64_t n_q() const { return n_head * head_dim; }     // query width
    int64_t n_kv() const { return n_head_kv * head_dim; } // key / value width
    int64_t n_gqa() const { return n_head / n_head_kv; }  // query heads per KV head
};

// Reads and validates general.architecture and the {arch}.* keys. Throws Error(unsupported) for an
// unknown architecture or an unsupported feature (per-layer arrays, key_length != value_length,
// unknown rope scaling), Error(format) for missing or inconsistent keys (the message names them).
Hparams read_hparams(const gguf::ModelFile& file);

}  // namespace strata::model
