// deepseek2 (Kimi K2, DeepSeek-V3; lib/model/deepseek2.md): multi-head latent attention with a
// latent KV cache, llama-order RoPE on the rope part of each head, MoE FFNs with shared experts.
#include "model/hparams.hpp"

namespace strata::model {

ArchTraits deepseek2_traits() {
    return {"deepseek2", RopeOrder::normal, /*qkv_bias=*/false, /*qk_norm=*/false, AttentionKind::mla};
}

}  // namespace strata::model
