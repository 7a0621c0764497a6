// What a Context over one layer range will need besides its weights, from the hyperparameters
// alone (nothing is allocated): the KV cache per position and the scratch of one micro-batch plus
// the per-position attention buffers. The Context plans with it (context.cpp), and so does the
// plan query (strata_model_plan_json), so the two figures cannot drift apart.
#pragma once

#include <cstdint>

#include "exec/attention/kv_cache.hpp"
#include "memory_plan.hpp"

namespace strata::model {
struct Hparams;
}

namespace strata::exec {

struct StageShape {
    int first_layer = 0;
    int last_layer = 0;            // exclusive: the layers [first_layer, last_layer)
    int64_t n_ctx = 0;             // the configured context, > 0
    int64_t n_batch = 512;         // > 0; the micro-batch is at most n_ctx tokens, as in a Context
    int n_threads = 0;             // <= 0: hardware concurrency, as the CPU backend counts it
    KvType kv_type = KvType::f16;
};

// The threads a CPU backend started with n_threads runs (<= 0: hardware concurrency, at least 1).
int cpu_backend_threads(int n_threads);

// PlanInputs without weight_bytes, n_ctx_train and budget_bytes (left to the caller): KV bytes per
// position of the range's layers, scratch fixed and per position. Throws Error(invalid_argument)
// for a bad range, context or batch, Error(unsupported) for a KV type the model cannot use (the
// KV cache's own message).
PlanInputs stage_plan_inputs(const model::Hparams& hp, const StageShape& shape);

}  // namespace strata::exec
