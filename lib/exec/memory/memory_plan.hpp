// The memory planner: what a context will need before anything is allocated, compared with a
// budget. Weights are the mapped bytes of the stage's tensors; the KV cache is exact for its type
// at the configured context, for every sequence slot (n_seq, each with its own n_ctx positions
// and recurrent state); scratch is the activation buffers for one micro-batch plus the per-thread
// attention scores (shared by the slots).
#pragma once

#include <cstdint>
#include <string>

#include "exec/attention/kv_cache.hpp"

namespace strata::exec {

// The long context the plans state the KV cache for beside the configured one: 2^20 tokens.
inline constexpr int64_t kLongContextTokens = int64_t(1) << 20;

struct MemoryPlan {
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes = 0;
    uint64_t kv_bytes_per_position = 0;  // all layers of the stage: kv_bytes = this * n_ctx * n_seq
    uint64_t state_bytes = 0;            // recurrent (KDA) state of every sequence, any context
    uint64_t scratch_bytes = 0;
    uint64_t total_bytes = 0;
    uint64_t budget_bytes = 0;
    int64_t n_ctx = 0;              // the configured context (of each sequence)
    int64_t n_seq = 1;              // sequence slots
    int64_t max_ctx_that_fits = 0;  // largest configured context (per sequence) within the budget (0: none)
    int64_t n_ctx_train = 0;        // the model's context_length (0: unknown), for the reader
    bool on_device = false;         // a GPU stage: weights uploaded, everything in device memory
    bool fits() const { return total_bytes <= budget_bytes; }
    std::string describe() const;
};

struct PlanInputs {
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes_per_position = 0;       // all layers, K and V
    uint64_t state_bytes = 0;                 // recurrent layers' fixed state, of one sequence
    uint64_t scratch_fixed_bytes = 0;         // independent of n_ctx
    uint64_t scratch_bytes_per_position = 0;  // grows with n_ctx (attention scores)
    int64_t n_ctx = 0;
    int64_t n_seq = 1;                        // sequence slots: KV and state count once per slot
    int64_t n_ctx_train = 0;                  // reported beside the contexts, never used to cap them
    uint64_t budget_bytes = 0;                // 0: available_memory_bytes()
};

MemoryPlan make_plan(const PlanInputs& in);

// MemAvailable from /proc/meminfo, in bytes; throws Error(io) when it cannot be read.
uint64_t available_memory_bytes();

}  // namespace strata::exec
