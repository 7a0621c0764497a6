// The entry points of the attention kernels (attention_cpu_impl.hpp) as each instruction-set
// file exports them; attention_cpu.cpp picks one table at run time.
#pragma once

#include <cstdint>

#include "attention_cpu.hpp"

namespace strata::exec::attn::detail {

inline constexpr int64_t kPad = 16;  // floats: the widest vector
constexpr int64_t padded(int64_t n) { return (n + kPad - 1) / kPad * kPad; }
// Bytes of n stored values (q8_0: n a multiple of 32).
constexpr uint64_t stored_bytes(RowType t, int64_t n) {
    return t == RowType::f32 ? uint64_t(n) * 4 : t == RowType::f16 ? uint64_t(n) * 2 : uint64_t(n / 32) * 34;
}

// Scratch floats the kernels need for group g: work (padded queries and one segment's scores)
// and one partial state.
constexpr int64_t work_floats(const Group& g) { return g.n_rows * (padded(g.dk) + kSegment); }
constexpr int64_t state_floats(const Group& g) { return g.n_rows * (padded(g.dv) + 2); }

struct Fns {
    // The partial of segment seg of g into state (state_floats(g)), using work (work_floats(g)).
    void (*segment)(const Group& g, int64_t seg, float* state, float* work);
    // a = the fold of partials a then b (a holds the earlier keys).
    void (*merge)(const Group& g, float* a, const float* b);
    // g.out = the normalised result of the folded state.
    void (*finish)(const Group& g, const float* state);
};

const Fns& scalar_fns();
const Fns& avx2_fns();    // only on CPUs with AVX2, FMA and F16C
const Fns& avx512_fns();  // only where util::has_avx512_vnni_kernels()

}  // namespace strata::exec::attn::detail
