#include "stage_memory.hpp"

#include <algorithm>
#include <string>

#include "exec/context/context_scratch.hpp"
#include "exec/cpu_backend.hpp"
#include "model/hparams.hpp"
#include "util/error.hpp"
#include "util/thread_pool.hpp"

namespace strata::exec {

int cpu_backend_threads(int n_threads) { return util::ThreadPool::size_for(n_threads); }

PlanInputs stage_plan_inputs(const model::Hparams& hp, const StageShape& shape) {
    if (shape.first_layer < 0 || shape.last_layer > hp.n_layer || shape.first_layer >= shape.last_layer)
        fail(Status::invalid_argument, "layer range [" + std::to_string(shape.first_layer) + ", " +
                                           std::to_string(shape.last_layer) + ") is not a non-empty range within the model's " +
                                           std::to_string(hp.n_layer) + " layers");
    if (shape.n_ctx <= 0) fail(Status::invalid_argument, "n_ctx must be positive, is " + std::to_string(shape.n_ctx));
    if (shape.n_batch <= 0) fail(Status::invalid_argument, "n_batch must be positive, is " + std::to_string(shape.n_batch));
    const int64_t n_batch = std::min(shape.n_batch, shape.n_ctx);
    const int threads = cpu_backend_threads(shape.n_threads);

    bool dense = false;  // the dense FFN buffers are needed when a layer of the range is dense
    for (int il = shape.first_layer; il < shape.last_layer; ++il) dense = dense || !hp.is_moe_layer(il);
    Context::Scratch none;  // only named, never sized: for_each_buffer reports the sizes
    uint64_t per_token_floats = 0, per_position_floats = 0;
    for_each_buffer(hp, dense, 1, 1, none, [&](std::vector<float>&, int64_t floats, bool per_position) {
        (per_position ? per_position_floats : per_token_floats) += uint64_t(floats);
    });
    const int64_t max_cols = std::max({hp.n_embd, hp.n_q(), hp.n_attn_out(), hp.n_ff, hp.moe.n_ff_exp,
                                       hp.mla.q_lora_rank, hp.mla.kv_lora_rank});
    // The largest single dispatch: one matmul of the micro-batch, the latent attention's per-head
    // products (n_head jobs), or an MoE layer's experts (n_expert_used rows per token).
    uint64_t matmul_scratch = CpuBackend::matmul_scratch_bytes_for(threads, n_batch, max_cols);
    if (hp.is_mla())
        matmul_scratch = std::max(matmul_scratch, CpuBackend::matmul_scratch_bytes_for(
                                                      threads, n_batch * hp.n_head, std::max(hp.mla.qk_nope, hp.mla.kv_lora_rank)));
    if (hp.moe.n_expert > 0)
        matmul_scratch = std::max(matmul_scratch, CpuBackend::matmul_scratch_bytes_for(
                                                      threads, n_batch * hp.moe.n_expert_used, std::max(hp.n_embd, hp.moe.n_ff_exp)));
    PlanInputs in;
    in.kv_bytes_per_position = kv_bytes_per_position_range(hp, shape.kv_type, shape.first_layer, shape.last_layer);
    in.state_bytes = state_bytes_range(hp, shape.first_layer, shape.last_layer);
    // + the matmul's quantized activations, and per thread the attention's head temporaries
    in.scratch_fixed_bytes = per_token_floats * uint64_t(n_batch) * sizeof(float) +
                             matmul_scratch +
                             uint64_t(threads) * uint64_t(2 * hp.head_dim) * sizeof(float);
    // + per thread the attention scores
    in.scratch_bytes_per_position = (per_position_floats + uint64_t(threads)) * sizeof(float);
    in.n_ctx = shape.n_ctx;
    return in;
}

}  // namespace strata::exec
