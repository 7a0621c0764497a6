// llama (llama.cpp src/models/llama.cpp): RMSNorm, GQA attention with normal-order RoPE, SwiGLU.
#include "model/hparams.hpp"

namespace strata::model {

ArchTraits llama_traits() { return {"llama", RopeOrder::normal, /*qkv_bias=*/false, /*qk_norm=*/false}; }

}  // namespace strata::model
