#include "device_plan.hpp"

#include <string>

#include "exec/device_activations.hpp"
#include "exec/attention/kv_cache.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"
#include "quant/formats.hpp"
#include "util/error.hpp"

namespace strata::exec {

namespace {

// The CUDA kernels' limits (cuda/kernels/attention/attention.cuh, mla_attention.cuh, kda.cuh, kda_chunk.cuh; the
// attention-residual mix scores at most 64 entries, the banked checkpoints and x: model_ops.cu).
constexpr int64_t kMaxLatent = 1024, kMaxRope = 128, kMinKdaHead = 32, kMaxKdaHead = 128, kMaxResEntries = 64;

[[noreturn]] void refuse(const model::Hparams& hp, const std::string& why) {
    fail(Status::unsupported, "the CUDA backend cannot run this '" + std::string(hp.arch.name) + "' model: " + why +
                                  " (run it on the CPU backend: device cpu)");
}

bool any_layer(const model::Hparams& hp, bool (*pred)(const model::Hparams&, int64_t)) {
    for (int64_t il = 0; il < hp.n_layer; ++il)
        if (pred(hp, il)) return true;
    return false;
}

bool is_gqa_layer(const model::Hparams& hp, int64_t il) { return !hp.is_recurrent_layer(il) && !hp.is_mla(); }
bool is_mla_layer(const model::Hparams& hp, int64_t il) { return !hp.is_recurrent_layer(il) && hp.is_mla(); }
bool is_kda_layer(const model::Hparams& hp, int64_t il) { return hp.is_recurrent_layer(il); }

}  // namespace

bool device_rope_tables(const model::Hparams& hp, int first, int last) {
    for (int il = first; il < last; ++il)
        if (is_gqa_layer(hp, il) || (is_mla_layer(hp, il) && hp.mla.rotate)) return hp.rope.n_rot >= 2;
    return false;
}

void check_gpu_supports(const model::Hparams& hp) {
    if (any_layer(hp, is_gqa_layer) && hp.head_dim != 64 && hp.head_dim != 128)
        refuse(hp, "the CUDA attention takes head dimensions 64 and 128; this model's is " + std::to_string(hp.head_dim));
    if (any_layer(hp, is_mla_layer)) {
        if (hp.mla.kv_lora_rank < 1 || hp.mla.kv_lora_rank > kMaxLatent)
            refuse(hp, "the CUDA latent attention takes a latent (kv_lora_rank) of 1.." + std::to_string(kMaxLatent) +
                           "; this model's is " + std::to_string(hp.mla.kv_lora_rank));
        if (hp.rope.n_rot > kMaxRope)
            refuse(hp, "the CUDA latent attention takes a rope part of at most " + std::to_string(kMaxRope) +
                           " values; this model's is " + std::to_string(hp.rope.n_rot));
    }
    if (any_layer(hp, is_kda_layer)) {
        const int64_t dk = hp.kda.head_dim;
        if (dk < kMinKdaHead || dk > kMaxKdaHead || dk % 32 != 0)
            refuse(hp, "the CUDA KDA kernels take heads of 32..128 channels in steps of 32; this model's are " +
                           std::to_string(dk));
        if (hp.kda.conv_kernel < 1) refuse(hp, "a KDA convolution of " + std::to_string(hp.kda.conv_kernel) + " taps");
    }
    if (const int64_t banks = hp.max_banks(); banks > 0) {
        if (banks + 1 > kMaxResEntries)
            refuse(hp, "the CUDA attention-residual mix takes at most " + std::to_string(kMaxResEntries - 1) +
                           " banked checkpoints; this model banks " + std::to_string(banks));
    }
}

std::string gpu_host_routing_reason(const model::ModelWeights& w) {
    for (const model::LayerWeights& L : w.layers) {
        if (!L.moe) continue;
        for (const model::WeightView* v : {&L.gate_exps, &L.up_exps, &L.down_exps})
            if (v->type != quant::kTypeIQ1_S || v->cols % 256 != 0)
                return "the routed experts " + v->name + " are not IQ1_S rows of whole 256-weight blocks, so MoE layers "
                       "route on the host and one-token steps are not captured as a CUDA graph";
    }
    return "";
}

uint64_t device_tensor_bytes(uint64_t nbytes, uint64_t pad) {
    const uint64_t n = nbytes + pad;
    return (n + kDeviceTensorAlign - 1) / kDeviceTensorAlign * kDeviceTensorAlign;
}

PlanInputs device_plan_inputs(const model::Hparams& hp, const DeviceStageShape& s) {
    if (s.first_layer < 0 || s.last_layer > hp.n_layer || s.first_layer >= s.last_layer)
        fail(Status::invalid_argument, "layer range [" + std::to_string(s.first_layer) + ", " +
                                           std::to_string(s.last_layer) + ") is not a non-empty range within the model's " +
                                           std::to_string(hp.n_layer) + " layers");
    if (s.n_ctx <= 0 || s.n_batch <= 0 || s.n_batch > s.n_ctx)
        fail(Status::invalid_argument, "device plan: n_ctx " + std::to_string(s.n_ctx) + " and n_batch " +
                                           std::to_string(s.n_batch) + " must satisfy 0 < n_batch <= n_ctx");
    for (int il = s.first_layer; il < s.last_layer; ++il)
        if (is_mla_layer(hp, il) && s.kv_type != KvType::f16)
            fail(Status::unsupported, std::string("the GPU's latent (MLA) cache is f16; a ") + kv_type_name(s.kv_type) +
                                          " cache runs on the CPU backend");
    const bool last = s.last_layer == hp.n_layer;
    PlanInputs in;
    in.weight_bytes = s.weight_bytes;
    in.kv_bytes_per_position = kv_bytes_per_position_range(hp, s.kv_type, s.first_layer, s.last_layer);
    in.state_bytes = state_bytes_range(hp, s.first_layer, s.last_layer);
    const uint64_t n_pairs = device_rope_tables(hp, s.first_layer, s.last_layer) ? uint64_t(hp.rope.n_rot / 2) : 0;
    in.scratch_bytes_per_position = 2 * n_pairs * sizeof(float);  // cos and sin tables
    const uint64_t logit_floats = last ? uint64_t(device_logit_rows(s.n_batch)) * uint64_t(hp.n_vocab) : 0;
    const DeviceActivationWidths widths = device_activation_widths(hp, s.first_layer, s.last_layer);
    in.scratch_fixed_bytes = device_activation_bytes(widths, s.n_batch, kDeviceTensorAlign) +
                             logit_floats * sizeof(float) +
                             uint64_t(s.n_batch) * sizeof(int32_t) + sizeof(int32_t) +  // token ids, n_past
                             s.matmul_workspace_bytes + s.attention_workspace_bytes + s.route_workspace_bytes;
    in.n_ctx = s.n_ctx;
    return in;
}

}  // namespace strata::exec
