// qwen2: llama with biases on the Q, K and V projections and NeoX-order RoPE.
#include "model/hparams.hpp"

namespace strata::model {

ArchTraits qwen2_traits() { return {"qwen2", RopeOrder::neox, /*qkv_bias=*/true, /*qk_norm=*/false}; }

}  // namespace strata::model
