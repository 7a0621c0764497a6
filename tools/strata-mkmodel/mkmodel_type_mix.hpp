// Per-tensor type mixes for strata-mkmodel (--type-mix NAME): the shapes of the types real
// releases use, so that demos and benchmarks read the bytes real users read. Public headers only.
#pragma once

#include <string>
#include <vector>

#include "mkmodel_plan.hpp"

namespace mkmodel {

// The names --type-mix accepts ("kimi-ud-iq1s").
std::vector<std::string> type_mix_names();

// True when `name` is a known mix.
bool is_type_mix(const std::string& name);

// Retypes every quantized tensor of `specs` (float32 vectors and routers stay float32) by the mix:
//   kimi-ud-iq1s  a Kimi K2 "UD-IQ1_S"-like release: routed experts' gate and up iq1_s, down
//                 iq1_m; attention q_b and output iq4_xs, q_a and dense/shared gate/up q4_K,
//                 shared/dense down q5_K, kv_a_mqa q6_K, attn_k_b/attn_v_b q8_0; token embeddings
//                 q4_K, output q6_K; every other matrix iq4_xs.
// A tensor whose rows do not fit its type's blocks falls back to q8_0 (rows of 32k) or f16,
// with `requested` recording the type it was meant to have.
void apply_type_mix(const std::string& mix, std::vector<TensorSpec>& specs);

// The type llama.cpp's general.file_type names for a mix (its LLAMA_FTYPE): the routed experts'.
int type_mix_file_type(const std::string& mix);

}  // namespace mkmodel
