#include "gpu_plan.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

#include "exec/memory/device_plan.hpp"
#include "exec/attention/kv_cache.hpp"
#include "exec/moe/moe_router.hpp"
#include "kernels/products/gemv.cuh"
#include "gpu_weights.hpp"
#include "kernels/kda/kda_chunk.cuh"
#include "kernels/moe/moe.cuh"
#include "quant/type_ids.hpp"
#include "util/error.hpp"

namespace strata::cuda {

void check_device_params(const model::Hparams& hp, const exec::ContextParams& params) {
    exec::check_gpu_supports(hp);
    if (params.n_ctx < 0)
        fail(Status::invalid_argument, "n_ctx must be >= 0 (0: the model's context length capped at 4096)");
    if (params.n_batch <= 0) fail(Status::invalid_argument, "n_batch must be positive");
    if (params.kda_chunk < 0) fail(Status::invalid_argument, "kda_chunk must be >= 0 (0: the step form)");
}

void carve_moe_workspace(Carver& c, const model::Hparams& hp, void*& route_ws, void*& act_in, void*& act_h) {
    const model::MoeParams& e = hp.moe;
    const int64_t Le = e.latent > 0 ? e.latent : hp.n_embd;
    route_ws = c.take<uint8_t>(moe_route_workspace_bytes(exec::moe_route_of(e), 1));
    act_in = c.take<uint8_t>(gemv_act_bytes(quant::kTypeIQ1_S, Le, 1));
    act_h = c.take<uint8_t>(gemv_act_bytes(quant::kTypeIQ1_S, e.n_ff_exp, int(e.n_expert_used)));
}

DeviceStagePlan device_stage_plan(const model::Hparams& hp, const model::ModelWeights& w,
                                  const exec::ContextParams& params) {
    check_device_params(hp, params);
    DeviceStagePlan s;
    s.n_ctx = params.n_ctx > 0 ? params.n_ctx : std::min<int64_t>(hp.n_ctx_train, 4096);
    if (s.n_ctx > INT32_MAX)
        fail(Status::invalid_argument, "n_ctx " + std::to_string(s.n_ctx) + " exceeds the GPU's 32-bit positions");
    s.n_batch = std::min(params.n_batch, s.n_ctx);

    bool any_gqa = false, any_kda = false;
    for (int il = w.first_layer; il < w.last_layer; ++il) {
        const bool rec = hp.is_recurrent_layer(il);
        any_kda = any_kda || rec;
        any_gqa = any_gqa || (!rec && !hp.is_mla());
    }
    if (any_kda && params.kda_chunk > kKdaChunkMaxTokens)  // (the CPU takes any chunk; the kernel's tiles are bounded)
        fail(Status::invalid_argument, "kda_chunk must be within [0, " + std::to_string(kKdaChunkMaxTokens) +
                                           "] on the GPU (0: the step form), is " + std::to_string(params.kda_chunk));
    for (const model::LayerWeights& L : w.layers) s.any_moe = s.any_moe || L.moe;

    s.limits = MatmulLimits{.max_tokens = s.n_batch};
    GpuWeights::matrix_extents(w, &s.limits.max_cols, &s.limits.max_rows);
    if (any_gqa) {
        s.attn = AttentionShape{.n_head = int(hp.n_head),
                                .n_head_kv = int(hp.n_head_kv),
                                .head_dim = int(hp.head_dim),
                                .kv_q8_0 = params.kv_type == exec::KvType::q8_0 ? 1 : 0,
                                .row_bytes = exec::kv_row_bytes(params.kv_type, hp.n_head_kv, hp.head_dim),
                                .n_ctx = s.n_ctx,
                                .scale = float(1.0 / std::sqrt(double(hp.head_dim)))};
        s.attention_workspace_bytes =
            std::max(attention_workspace_bytes(s.attn, 1), attention_workspace_bytes(s.attn, int(s.n_batch)));
    }
    // MoE: on the device when every routed expert is IQ1_S (one-token steps), else on the host.
    if (s.any_moe) {
        s.host_routing = exec::gpu_host_routing_reason(w);
        if (s.host_routing.empty()) {
            Carver measure(nullptr);
            void *route_ws = nullptr, *act_in = nullptr, *act_h = nullptr;
            carve_moe_workspace(measure, hp, route_ws, act_in, act_h);
            s.route_workspace_bytes = measure.bytes();
        }
    }

    s.inputs = exec::device_plan_inputs(hp, {.first_layer = w.first_layer,
                                             .last_layer = w.last_layer,
                                             .n_ctx = s.n_ctx,
                                             .n_batch = s.n_batch,
                                             .kv_type = params.kv_type,
                                             .weight_bytes = GpuWeights::upload_bytes(w),
                                             .matmul_workspace_bytes = DeviceMatmul::workspace_bytes(s.limits),
                                             .attention_workspace_bytes = s.attention_workspace_bytes,
                                             .route_workspace_bytes = s.route_workspace_bytes});
    s.inputs.n_ctx_train = hp.n_ctx_train;
    return s;
}

exec::PlanInputs device_stage_plan_inputs(const gguf::ModelFile& file, const model::Hparams& hp,
                                          const exec::ContextParams& params) {
    check_device_params(hp, params);  // before binding: a model the GPU cannot run
    const int last = params.last_layer < 0 ? int(hp.n_layer) : params.last_layer;
    return device_stage_plan_inputs(hp, model::bind_weights(file, hp, params.first_layer, last), params);
}

}  // namespace strata::cuda
