#include "exec/device_plan.hpp"

#include <string>

#include "exec/kv_cache.hpp"
#include "model/hparams.hpp"
#include "util/error.hpp"

namespace strata::exec {

void check_gpu_supports(const model::Hparams& hp) {
    const bool llama_family = hp.arch.attention == model::AttentionKind::gqa && hp.moe.n_expert == 0 &&
                              hp.recurrent.empty() && hp.attn_res_block == 0 && hp.moe.situ_beta <= 0.0;
    if (!llama_family)
        fail(Status::unsupported, std::string("the CUDA backend does not run the '") + hp.arch.name +
                                      "' architecture yet (it runs llama, qwen2 and qwen3); '" + hp.arch.name +
                                      "' runs on the CPU backend for now (device cpu)");
    if (hp.head_dim != 64 && hp.head_dim != 128)
        fail(Status::unsupported, "the CUDA attention takes head dimensions 64 and 128; this model's is " +
                                      std::to_string(hp.head_dim) + " (run it on the CPU backend)");
}

uint64_t device_tensor_bytes(uint64_t nbytes, uint64_t pad) {
    const uint64_t n = nbytes + pad;
    return (n + kDeviceTensorAlign - 1) / kDeviceTensorAlign * kDeviceTensorAlign;
}

uint64_t device_activation_floats_per_token(const model::Hparams& hp) {
    const uint64_t E = uint64_t(hp.n_embd), Q = uint64_t(hp.n_q()), KV = uint64_t(hp.n_kv()), F = uint64_t(hp.n_ff);
    return 3 * E + 2 * Q + 2 * KV + 2 * F;  // x, xn, proj | q, attn | k, v | gate, up
}

PlanInputs device_plan_inputs(const model::Hparams& hp, const DeviceStageShape& s) {
    if (s.first_layer < 0 || s.last_layer > hp.n_layer || s.first_layer >= s.last_layer)
        fail(Status::invalid_argument, "layer range [" + std::to_string(s.first_layer) + ", " +
                                           std::to_string(s.last_layer) + ") is not a non-empty range within the model's " +
                                           std::to_string(hp.n_layer) + " layers");
    if (s.n_ctx <= 0 || s.n_batch <= 0 || s.n_batch > s.n_ctx)
        fail(Status::invalid_argument, "device plan: n_ctx " + std::to_string(s.n_ctx) + " and n_batch " +
                                           std::to_string(s.n_batch) + " must satisfy 0 < n_batch <= n_ctx");
    const bool last = s.last_layer == hp.n_layer;
    PlanInputs in;
    in.weight_bytes = s.weight_bytes;
    in.kv_bytes_per_position = kv_bytes_per_position_range(hp, s.kv_type, s.first_layer, s.last_layer);
    const uint64_t n_pairs = uint64_t(hp.rope.n_rot / 2);
    in.scratch_bytes_per_position = 2 * n_pairs * sizeof(float);  // cos and sin tables
    const uint64_t logit_floats = last ? uint64_t(device_logit_rows(s.n_batch)) * uint64_t(hp.n_vocab) : 0;
    in.scratch_fixed_bytes = (device_activation_floats_per_token(hp) * uint64_t(s.n_batch) + logit_floats) * sizeof(float) +
                             uint64_t(s.n_batch) * sizeof(int32_t) + sizeof(int32_t) +  // token ids, n_past
                             s.matmul_workspace_bytes + s.attention_workspace_bytes;
    in.n_ctx = s.n_ctx;
    return in;
}

}  // namespace strata::exec
