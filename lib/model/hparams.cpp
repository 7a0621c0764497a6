// Reading the hyperparameters (key names from llama.cpp's llama-arch.cpp); the deepseek2 part is
// in hparams_deepseek2.cpp.
#include "model/hparams.hpp"

#include <cmath>

#include "gguf/model_file.hpp"
#include "model/metadata.hpp"
#include "util/error.hpp"

namespace strata::model {

ArchTraits find_arch(const std::string& name) {
    for (const ArchTraits& t :
         {llama_traits(), qwen2_traits(), qwen3_traits(), deepseek2_traits(), kimi_linear_traits(), kimi_k3_traits()})
        if (name == t.name) return t;
    fail(Status::unsupported,
         "unsupported architecture '" + name + "' (supported: llama, qwen2, qwen3, deepseek2, kimi-linear, kimi-k3)");
}

[[noreturn]] void bad_key(const std::string& key, const std::string& why) {
    fail(Status::format, "metadata key '" + key + "' " + why);
}

int64_t positive_key(const gguf::ModelFile& f, const std::string& key, std::optional<int64_t> fallback) {
    const auto v = meta_int(f, key);
    if (!v && !fallback) bad_key(key, "is missing");
    const int64_t x = v ? *v : *fallback;
    if (x <= 0) bad_key(key, "must be positive, is " + std::to_string(x));
    return x;
}

namespace {

void bad(const std::string& key, const std::string& why) { bad_key(key, why); }
int64_t positive(const gguf::ModelFile& f, const std::string& key, std::optional<int64_t> fallback = {}) {
    return positive_key(f, key, fallback);
}

}  // namespace

void read_rope(const gguf::ModelFile& f, const std::string& p, Hparams& hp) {
    RopeParams& r = hp.rope;
    r.n_rot = meta_int(f, p + "rope.dimension_count").value_or(hp.head_dim);
    if (r.n_rot <= 0 || r.n_rot % 2 != 0)
        bad(p + "rope.dimension_count", "must be positive and even, is " + std::to_string(r.n_rot));
    if (r.n_rot > hp.head_dim)
        bad(p + "rope.dimension_count", "(" + std::to_string(r.n_rot) + ") is larger than the head dimension " +
                                            std::to_string(hp.head_dim));
    r.freq_base = meta_float(f, p + "rope.freq_base").value_or(10000.0);
    if (!(r.freq_base > 1.0) || !std::isfinite(r.freq_base)) bad(p + "rope.freq_base", "must be a finite number > 1");

    // As llama.cpp: an absent type means linear, and a factor (older files: rope.scale_linear)
    // scales positions whatever the type says; without a factor nothing is scaled.
    const std::string type = meta_string(f, p + "rope.scaling.type").value_or("linear");
    double factor = meta_float(f, p + "rope.scaling.factor").value_or(meta_float(f, p + "rope.scale_linear").value_or(1.0));
    if (factor == 0.0) factor = 1.0;  // llama.cpp reads a zero factor as "not set"
    if (type == "none") {
        r.scaling = RopeScaling::none;
    } else if (type == "linear") {
        r.scaling = RopeScaling::linear;
    } else if (type == "yarn") {
        r.scaling = RopeScaling::yarn;
    } else {
        fail(Status::unsupported, "metadata key '" + p + "rope.scaling.type' has unsupported value '" + type +
                                      "' (supported: none, linear, yarn)");
    }
    if (!(factor > 0.0) || !std::isfinite(factor)) bad(p + "rope.scaling.factor", "must be a finite number > 0");
    r.factor = factor;
    r.n_ctx_orig = meta_int(f, p + "rope.scaling.original_context_length").value_or(hp.n_ctx_train);
    if (r.n_ctx_orig <= 0) bad(p + "rope.scaling.original_context_length", "must be positive");
    r.ext_factor = meta_float(f, p + "rope.scaling.yarn_ext_factor").value_or(r.scaling == RopeScaling::yarn ? 1.0 : 0.0);
    r.attn_factor = meta_float(f, p + "rope.scaling.yarn_attn_factor")
                        .value_or(meta_float(f, p + "rope.scaling.attn_factor").value_or(1.0));
    r.beta_fast = meta_float(f, p + "rope.scaling.yarn_beta_fast").value_or(32.0);
    r.beta_slow = meta_float(f, p + "rope.scaling.yarn_beta_slow").value_or(1.0);
    for (double v : {r.ext_factor, r.attn_factor, r.beta_fast, r.beta_slow})
        if (!std::isfinite(v)) bad(p + "rope.scaling.yarn_*", "must be finite");
}

Hparams read_hparams(const gguf::ModelFile& f) {
    const auto arch_name = meta_string(f, "general.architecture");
    if (!arch_name) fail(Status::format, "metadata key 'general.architecture' is missing");
    Hparams hp;
    hp.arch = find_arch(*arch_name);
    const std::string p = std::string(hp.arch.name) + ".";

    hp.n_ctx_train = positive(f, p + "context_length");
    hp.n_embd = positive(f, p + "embedding_length");
    hp.n_layer = positive(f, p + "block_count");
    hp.n_ff = positive(f, p + "feed_forward_length");
    hp.n_head = positive(f, p + "attention.head_count");
    // kimi: a per-layer array that marks the recurrent layers (read_kimi_hparams)
    if (hp.arch.attention != AttentionKind::kda_mla) hp.n_head_kv = positive(f, p + "attention.head_count_kv", hp.n_head);
    if (hp.n_layer > 100000) bad(p + "block_count", "is implausibly large (" + std::to_string(hp.n_layer) + ")");
    hp.rms_eps = meta_float(f, p + "attention.layer_norm_rms_epsilon").value_or(1e-5);
    if (!(hp.rms_eps > 0.0) || !std::isfinite(hp.rms_eps))
        bad(p + "attention.layer_norm_rms_epsilon", "must be a finite number > 0");
    if (hp.arch.attention == AttentionKind::kda_mla) {
        read_kimi_hparams(f, p, hp);
    } else if (hp.is_mla()) {
        read_deepseek2_hparams(f, p, hp);
    } else {
        read_gqa_attention(f, p, hp);
        read_rope(f, p, hp);
    }
    read_vocab_size(f, hp);
    return hp;
}

void read_gqa_attention(const gguf::ModelFile& f, const std::string& p, Hparams& hp) {
    if (hp.n_head % hp.n_head_kv != 0)
        bad(p + "attention.head_count_kv", "(" + std::to_string(hp.n_head_kv) + ") does not divide attention.head_count (" +
                                               std::to_string(hp.n_head) + ")");

    const auto k_len = meta_int(f, p + "attention.key_length");
    const auto v_len = meta_int(f, p + "attention.value_length");
    if (!k_len && hp.n_embd % hp.n_head != 0)
        bad(p + "attention.head_count", "(" + std::to_string(hp.n_head) + ") does not divide embedding_length (" +
                                            std::to_string(hp.n_embd) + ") and attention.key_length is absent");
    hp.head_dim = k_len.value_or(hp.n_embd / hp.n_head);
    if (hp.head_dim <= 0) bad(p + "attention.key_length", "must be positive");
    if (v_len.value_or(hp.head_dim) != hp.head_dim)
        fail(Status::unsupported, "metadata keys '" + p + "attention.key_length' (" + std::to_string(hp.head_dim) +
                                      ") and 'attention.value_length' (" + std::to_string(*v_len) +
                                      ") differ: not supported for the llama family");
}

void read_vocab_size(const gguf::ModelFile& f, Hparams& hp) {
    const auto te = f.find_tensor("token_embd.weight");
    if (!te) fail(Status::format, "tensor 'token_embd.weight' is missing (it gives the vocabulary size)");
    hp.n_vocab = f.tensors()[*te].ne[1];
    if (hp.n_vocab <= 0 || hp.n_vocab > INT32_MAX)
        fail(Status::format, "tensor 'token_embd.weight' has an unusable vocabulary size " + std::to_string(hp.n_vocab));
}

}  // namespace strata::model
