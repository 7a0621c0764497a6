// strata_model_plan_json: the memory plan of every stage of a model, from its tensor table and
// hyperparameters alone (nothing allocated). The KV and scratch figures come from the function a
// Context plans with (exec/memory/stage_memory.hpp), the weights and the even split from the pipeline's
// planner (pipeline/planner.hpp). For STRATA_DEVICE_CUDA each stage is what the GPU context plans
// (cuda/runtime/gpu_plan.hpp), from the stage's bound weights.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capi/device.hpp"
#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "exec/memory/stage_memory.hpp"
#include "model/hparams.hpp"
#include "pipeline/planner.hpp"
#include "util/checked.hpp"
#ifdef STRATA_HAVE_CUDA
#include "runtime/gpu_plan.hpp"
#endif

using strata::Status;
using strata::fail;
using strata::capi::require;

namespace {

using json = nlohmann::ordered_json;  // members in the order written

// n_ctx positions of per_position bytes plus fixed, refused by name when it overflows.
uint64_t at(uint64_t fixed, uint64_t per_position, int64_t n_ctx, const char* what) {
    auto r = strata::util::checked_mul(per_position, uint64_t(n_ctx));
    if (r) r = strata::util::checked_add(*r, fixed);
    if (!r) fail(Status::invalid_argument, std::string(what) + " for n_ctx = " + std::to_string(n_ctx) +
                                               " tokens does not fit 64 bits");
    return *r;
}

std::vector<strata::pipeline::LayerRange> stage_ranges(const strata_plan_params& p, const strata::model::Hparams& hp,
                                                       const strata::pipeline::LayerCosts& weights) {
    using namespace strata::pipeline;
    const int n_layers = int(hp.n_layer);
    if (p.layers) {
        auto ranges = parse_layer_plan(p.layers);
        if (p.n_stages > 1 && size_t(p.n_stages) != ranges.size())
            fail(Status::invalid_argument, "the layer plan " + format_layer_plan(ranges) + " has " +
                                               std::to_string(ranges.size()) + " ranges, n_stages is " +
                                               std::to_string(p.n_stages));
        check_layer_plan(ranges, n_layers, ranges.size());
        return ranges;
    }
    if (p.n_stages <= 1) return {{0, n_layers}};
    // Unknown capacities: the planner splits the layers evenly by count.
    return plan_by_memory(weights, std::vector<uint64_t>(size_t(p.n_stages), 0));
}

// The device plan of layers [first, last) (n_threads does not enter it).
strata::exec::PlanInputs device_stage_inputs(const strata::gguf::ModelFile& file, const strata::model::Hparams& hp,
                                             const strata_plan_params& p, strata::exec::KvType kv_type, int first,
                                             int last) {
#ifdef STRATA_HAVE_CUDA
    strata::exec::ContextParams cp;
    cp.n_ctx = p.n_ctx;
    cp.n_batch = p.n_batch;
    cp.kv_type = kv_type;
    cp.first_layer = first;
    cp.last_layer = last;
    return strata::cuda::device_stage_plan_inputs(file, hp, cp);
#else
    (void)file;
    (void)hp;
    (void)p;
    (void)kv_type;
    (void)first;
    (void)last;
    strata::capi::no_cuda_backend();
#endif
}

std::string plan_json(const strata::gguf::ModelFile& file, const strata_plan_params& p) {
    namespace exec = strata::exec;
    if (p.n_ctx <= 0)
        fail(Status::invalid_argument, "n_ctx is " + std::to_string(p.n_ctx) + ", expected a positive token count");
    if (p.n_batch <= 0)
        fail(Status::invalid_argument, "n_batch is " + std::to_string(p.n_batch) + ", expected a positive token count");
    if (p.n_threads < 0)
        fail(Status::invalid_argument, "n_threads is " + std::to_string(p.n_threads) + ", expected 0 or more");
    if (p.n_stages < 0)
        fail(Status::invalid_argument, "n_stages is " + std::to_string(p.n_stages) + ", expected 0 or more");
    if (p.kv_type != STRATA_KV_F16 && p.kv_type != STRATA_KV_Q8_0)
        fail(Status::invalid_argument,
             "kv_type is " + std::to_string(p.kv_type) + ", expected STRATA_KV_F16 or STRATA_KV_Q8_0");
    strata::capi::check_device(p.device);
    const bool cuda = p.device == STRATA_DEVICE_CUDA;
    const exec::KvType kv_type = p.kv_type == STRATA_KV_Q8_0 ? exec::KvType::q8_0 : exec::KvType::f16;
    const strata::model::Hparams hp = strata::model::read_hparams(file);
    const uint64_t kv_per_token = exec::kv_bytes_per_position_range(hp, kv_type, 0, hp.n_layer);  // refuses the type first
    const strata::pipeline::LayerCosts weights = strata::pipeline::weight_costs(file);
    const auto ranges = stage_ranges(p, hp, weights);
    const int threads = exec::cpu_backend_threads(p.n_threads);
    const int64_t long_ctx = exec::kLongContextTokens;

    json recurrent = json::array();  // the KDA layers: a fixed state per sequence, no KV cache
    for (int64_t il = 0; il < hp.n_layer; ++il)
        if (hp.is_recurrent_layer(il)) recurrent.push_back(il);
    json stages = json::array();
    for (size_t i = 0; i < ranges.size(); ++i) {
        const auto& r = ranges[i];
        const exec::PlanInputs in = cuda ? device_stage_inputs(file, hp, p, kv_type, r.first, r.second)
                                         : exec::stage_plan_inputs(hp, {.first_layer = r.first,
                                                                        .last_layer = r.second,
                                                                        .n_ctx = p.n_ctx,
                                                                        .n_batch = p.n_batch,
                                                                        .n_threads = threads,
                                                                        .kv_type = kv_type});
        const uint64_t weight = cuda ? in.weight_bytes : weights.stage_bytes(r, i == 0, i + 1 == ranges.size());
        const uint64_t kv = at(0, in.kv_bytes_per_position, p.n_ctx, "the KV cache");
        const uint64_t scratch = at(in.scratch_fixed_bytes, in.scratch_bytes_per_position, p.n_ctx, "the scratch");
        const uint64_t kv_1m = at(0, in.kv_bytes_per_position, long_ctx, "the KV cache");
        const uint64_t scratch_1m = at(in.scratch_fixed_bytes, in.scratch_bytes_per_position, long_ctx, "the scratch");
        stages.push_back({{"stage", i},
                          {"first_layer", r.first},
                          {"last_layer", r.second},
                          {"weight_bytes", weight},
                          {"kv_bytes_per_token", in.kv_bytes_per_position},
                          {"kv_bytes", kv},
                          {"kv_bytes_at_1m", kv_1m},
                          {"state_bytes", in.state_bytes},
                          {"scratch_bytes", scratch},
                          {"scratch_bytes_at_1m", scratch_1m},
                          {"total_bytes", weight + kv + in.state_bytes + scratch},
                          {"total_bytes_at_1m", weight + kv_1m + in.state_bytes + scratch_1m}});
    }
    const json out = {{"architecture", hp.arch.name},
                      {"device", cuda ? "cuda" : "cpu"},
                      {"n_layer", hp.n_layer},
                      {"n_ctx", p.n_ctx},
                      {"n_ctx_train", hp.n_ctx_train},
                      {"kv_type", exec::kv_type_name(kv_type)},
                      {"n_batch", std::min(p.n_batch, p.n_ctx)},
                      {"n_threads", threads},
                      {"long_context_tokens", long_ctx},
                      {"layers", strata::pipeline::format_layer_plan(ranges)},
                      {"kv_bytes_per_token", kv_per_token},
                      {"kv_bytes", at(0, kv_per_token, p.n_ctx, "the KV cache")},
                      {"kv_bytes_at_1m", at(0, kv_per_token, long_ctx, "the KV cache")},
                      {"recurrent_layers", recurrent},
                      {"state_bytes", exec::state_bytes_range(hp, 0, hp.n_layer)},
                      {"stages", stages}};
    return out.dump(2);
}

}  // namespace

extern "C" {

void strata_plan_default_params(strata_plan_params* params) {
    if (!params) return;
    std::memset(static_cast<void*>(params), 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->n_ctx = 4096;
    params->kv_type = STRATA_KV_F16;
    params->n_stages = 1;
    params->n_batch = 512;
    params->device = STRATA_DEVICE_CPU;
}

strata_status strata_model_plan_json(const strata_model* model, const strata_plan_params* params, char* text,
                                     size_t capacity, size_t* out_needed) {
    STRATA_API_BEGIN
    require(model, "model");
    // The first release's struct ended before `device` (strata.h): its callers get the CPU plan.
    const strata_plan_params p =
        strata::capi::params_or_default(params, strata_plan_default_params, offsetof(strata_plan_params, device));
    strata::capi::copy_text_out(plan_json(strata::capi::file_of(model), p), text, capacity, out_needed,
                                "the plan");
    STRATA_API_END
}

}  // extern "C"
