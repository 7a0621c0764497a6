// qwen3: llama with a per-head RMSNorm on Q and K (before RoPE), NeoX-order RoPE, no biases.
#include "model/hparams.hpp"

namespace strata::model {

ArchTraits qwen3_traits() { return {"qwen3", RopeOrder::neox, /*qkv_bias=*/false, /*qk_norm=*/true}; }

}  // namespace strata::model
