// kimi-linear (Kimi-Linear) and kimi-k3 (Kimi K3) (lib/model/kimi_linear.md): KDA recurrent layers
// interleaved with NoPE MLA layers, sigmoid-routed MoE with shared experts; K3 adds a lower-bound
// decay gate, full-rank output gates, an MLA output gate, latent routed experts, SiTU and
// attention residuals.
#include "model/hparams.hpp"

namespace strata::model {

ArchTraits kimi_linear_traits() {
    return {"kimi-linear", RopeOrder::normal, /*qkv_bias=*/false, /*qk_norm=*/false, AttentionKind::kda_mla};
}

ArchTraits kimi_k3_traits() {
    return {"kimi-k3", RopeOrder::normal, /*qkv_bias=*/false, /*qk_norm=*/false, AttentionKind::kda_mla};
}

}  // namespace strata::model
