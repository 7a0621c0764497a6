// Scheduling of the attention kernels (attention_cpu.hpp): which kernel, which thread runs which
// segments, and the fold of the partials in segment order.
#include "attention_cpu.hpp"

#include <algorithm>
#include <vector>

#include "attention_cpu_kernels.hpp"
#include "exec/backend.hpp"
#include "util/cpu_features.hpp"
#include "util/error.hpp"

namespace strata::exec::attn {

namespace {

const detail::Fns& fns(Kernel k) {
    switch (resolve(k)) {
#if defined(__x86_64__)
        case Kernel::avx512: return detail::avx512_fns();
        case Kernel::avx2: return detail::avx2_fns();
#endif
        default: return detail::scalar_fns();
    }
}

// Every segment of g in order, folded into a (a and b: state_floats(g) each).
void run_whole(const detail::Fns& f, const Group& g, float* work, float* a, float* b) {
    f.segment(g, 0, a, work);
    for (int64_t s = 1; s < n_segments(g.n_keys); ++s) {
        f.segment(g, s, b, work);
        f.merge(g, a, b);
    }
    f.finish(g, a);
}

void check(const Group& g) {
    // A bug in the caller (the forward pass, a test), not bad user input.
    if (g.n_rows < 1 || g.n_keys < 1 || g.dk < 1 || g.dv < 1 || g.dk_a < 1 || g.dk_a > g.dk ||
        (g.k.type == RowType::q8_0 && g.dk % 32 != 0) || (g.v.type == RowType::q8_0 && g.dv % 32 != 0) ||
        g.k.type != g.v.type)
        fail(Status::internal, "attention: a group of unusable shape");
}

// Few groups (one decode token's KV heads, latent attention's single group) leave threads idle
// when each is one job; then each segment is a job and the folds a second pass.
bool split_segments(int n_threads, int64_t n_groups, int64_t n_units) {
    return n_threads > 1 && n_units > n_groups && n_groups < 4 * int64_t(n_threads);
}

}  // namespace

Kernel resolve(Kernel k) {
    const bool avx512 = util::has_avx512_vnni_kernels(), avx2 = util::has_avx2_kernels();
    if (k == Kernel::best) k = Kernel::avx512;
    if (k == Kernel::avx512 && !avx512) k = Kernel::avx2;
    if (k == Kernel::avx2 && !avx2) k = Kernel::scalar;
    return k;
}

const char* kernel_name(Kernel k) {
    switch (k) {
        case Kernel::best: return "best";
        case Kernel::scalar: return "scalar";
        case Kernel::avx2: return "avx2";
        case Kernel::avx512: return "avx512";
    }
    return "?";
}

void attend_one(const Group& g, Kernel kernel) {
    check(g);
    const int64_t st = detail::state_floats(g);
    std::vector<float> buf(size_t(detail::work_floats(g) + 2 * st));
    run_whole(fns(kernel), g, buf.data() + 2 * st, buf.data(), buf.data() + st);
}

void attend(Backend& be, int64_t n_groups, const std::function<Group(int64_t)>& group, Kernel kernel) {
    if (n_groups <= 0) return;
    const detail::Fns& f = fns(kernel);
    // unit[i]: the first segment of group i in the list of all segments; at[i]: where its
    // partials start in the states buffer (split mode).
    std::vector<int64_t> unit(size_t(n_groups + 1), 0), at(size_t(n_groups + 1), 0);
    for (int64_t i = 0; i < n_groups; ++i) {
        const Group g = group(i);
        check(g);
        unit[size_t(i + 1)] = unit[size_t(i)] + n_segments(g.n_keys);
        at[size_t(i + 1)] = at[size_t(i)] + n_segments(g.n_keys) * detail::state_floats(g);
    }
    const int64_t n_units = unit[size_t(n_groups)];

    if (!split_segments(be.n_threads(), n_groups, n_units)) {
        be.parallel_for(n_groups, [&](int64_t begin, int64_t end) {
            std::vector<float> buf;
            for (int64_t i = begin; i < end; ++i) {
                const Group g = group(i);
                const int64_t st = detail::state_floats(g);
                buf.resize(std::max(buf.size(), size_t(detail::work_floats(g) + 2 * st)));
                run_whole(f, g, buf.data() + 2 * st, buf.data(), buf.data() + st);
            }
        });
        return;
    }
    // The same segment and merge calls as run_whole, in the same order per group: only where the
    // partials wait for their fold differs.
    std::vector<float> states(size_t(at[size_t(n_groups)]));
    be.parallel_for(n_units, [&](int64_t begin, int64_t end) {
        std::vector<float> work;
        for (int64_t u = begin; u < end; ++u) {
            const int64_t i = int64_t(std::upper_bound(unit.begin(), unit.end(), u) - unit.begin()) - 1;
            const Group g = group(i);
            const int64_t s = u - unit[size_t(i)];
            work.resize(std::max(work.size(), size_t(detail::work_floats(g))));
            f.segment(g, s, states.data() + at[size_t(i)] + s * detail::state_floats(g), work.data());
        }
    });
    be.parallel_for(n_groups, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const Group g = group(i);
            const int64_t st = detail::state_floats(g);
            float* a = states.data() + at[size_t(i)];
            for (int64_t s = 1; s < n_segments(g.n_keys); ++s) f.merge(g, a, a + s * st);
            f.finish(g, a);
        }
    });
}

}  // namespace strata::exec::attn
