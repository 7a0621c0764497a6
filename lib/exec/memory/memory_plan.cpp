#include "memory_plan.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "util/error.hpp"

namespace strata::exec {

namespace {

std::string mib(uint64_t bytes) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / (1024.0 * 1024.0));
    return buf;
}

std::string gib(uint64_t bytes) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

}  // namespace

std::string MemoryPlan::describe() const {
    std::ostringstream s;
    s << (on_device ? "device memory plan: weights " : "memory plan: weights ") << mib(weight_bytes)
      << (on_device ? " (uploaded)" : " (mapped)") << " + KV cache " << mib(kv_bytes)
      << " (" << (n_seq > 1 ? std::to_string(n_seq) + " sequences, " : std::string()) << "configured context "
      << n_ctx << (n_seq > 1 ? " each" : "") << "; " << kv_bytes_per_position << " B/token; at " << kLongContextTokens
      << " tokens: " << gib(kv_bytes_per_position * uint64_t(kLongContextTokens)) << ")";
    if (state_bytes > 0)
        s << " + recurrent state " << mib(state_bytes) << " (fixed, any context" << (n_seq > 1 ? ", every sequence" : "")
          << ")";
    s << " + scratch "
      << mib(scratch_bytes) << " = " << mib(total_bytes)
      << "; budget " << mib(budget_bytes) << (on_device ? " of device memory" : "") << (fits() ? " (fits)" : " (exceeds the budget)")
      << "; largest configured context that fits: " << max_ctx_that_fits;
    // Memory is not the only limit: say what the model was trained for when the file tells.
    if (n_ctx_train > 0) s << " (the model's context_length is " << n_ctx_train << ")";
    return s.str();
}

uint64_t available_memory_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t value = 0;
    std::string unit;
    while (in >> key >> value) {
        std::getline(in, unit);
        if (key == "MemAvailable:") return value * 1024;  // reported in kB
    }
    fail(Status::io, "cannot read MemAvailable from /proc/meminfo (give a memory budget explicitly)");
}

MemoryPlan make_plan(const PlanInputs& in) {
    MemoryPlan p;
    p.weight_bytes = in.weight_bytes;
    const uint64_t n_seq = uint64_t(in.n_seq > 0 ? in.n_seq : 1);
    p.kv_bytes = in.kv_bytes_per_position * uint64_t(in.n_ctx) * n_seq;
    p.kv_bytes_per_position = in.kv_bytes_per_position;
    p.state_bytes = in.state_bytes * n_seq;
    p.scratch_bytes = in.scratch_fixed_bytes + in.scratch_bytes_per_position * uint64_t(in.n_ctx);
    p.total_bytes = p.weight_bytes + p.kv_bytes + p.state_bytes + p.scratch_bytes;
    p.budget_bytes = in.budget_bytes ? in.budget_bytes : available_memory_bytes();
    p.n_ctx = in.n_ctx;
    p.n_seq = int64_t(n_seq);
    p.n_ctx_train = in.n_ctx_train;
    const uint64_t fixed = in.weight_bytes + p.state_bytes + in.scratch_fixed_bytes;
    const uint64_t per_pos = in.kv_bytes_per_position * n_seq + in.scratch_bytes_per_position;
    if (p.budget_bytes > fixed && per_pos > 0) {
        const uint64_t n = (p.budget_bytes - fixed) / per_pos;
        p.max_ctx_that_fits = n > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(n);
    }
    return p;
}

}  // namespace strata::exec
