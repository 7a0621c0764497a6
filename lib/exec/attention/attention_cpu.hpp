// CPU attention kernels: softmax(scale * q K^T) V for groups of query rows that share one run
// of cached keys (the G query heads of one KV head; the heads of latent attention), read straight
// from the cache's storage (f32, f16 or q8_0 rows) without decoding rows to a float copy first.
//
// Arithmetic (the bit-exactness contract): the keys [0, n_keys) of a group are cut into segments
// of kSegment keys from key 0. Each segment gives a partial result per row (its max score, its
// sum of exponentials, its unnormalised sum of V rows), computed by the same code whichever rows
// share the group and whichever thread runs it; the partials are folded left to right in segment
// order and divided out at the end. So a row's result depends only on its query, its keys and
// the kernel (scalar, AVX2, AVX-512), never on the batch, the thread count, or how the segments
// were scheduled (run whole by one thread, or spread over threads when there are few groups).
#pragma once

#include <cstdint>
#include <functional>

namespace strata::exec {
class Backend;
}

namespace strata::exec::attn {

enum class RowType { f32, f16, q8_0 };

// One stored row per position: position p starts at data + p * stride. q8_0 rows need their
// width to be a multiple of 32 (blocks never straddle it).
struct Rows {
    const uint8_t* data = nullptr;
    uint64_t stride = 0;
    RowType type = RowType::f16;
};

inline constexpr int64_t kSegment = 256;  // keys per segment (a multiple of every vector width)

// One group: n_rows query rows attending to keys [0, n_keys) of k and v. A query row is dk floats,
// given in two parts (the dk_a floats at q_a, then dk - dk_a at q_b; dk_a == dk: q_a only) so that
// latent attention's [q_abs | q_pe] needs no concatenated copy. The key row is dk values of k;
// the value row the first dv values of v (latent attention: the same rows as k).
struct Group {
    const float* q_a = nullptr;
    const float* q_b = nullptr;
    int64_t q_a_stride = 0, q_b_stride = 0;  // floats between consecutive rows
    int64_t dk_a = 0, dk = 0, dv = 0;
    int64_t n_rows = 0, n_keys = 0;
    Rows k, v;
    float scale = 1.0f;
    float* out = nullptr;  // row r: dv floats at out + r * out_stride
    int64_t out_stride = 0;
};

enum class Kernel { best, scalar, avx2, avx512 };

// The kernel `best` resolves to on this CPU ($STRATA_CPU=scalar: scalar); a kernel the CPU lacks
// resolves to the best it has.
Kernel resolve(Kernel k);
const char* kernel_name(Kernel k);

inline int64_t n_segments(int64_t n_keys) { return (n_keys + kSegment - 1) / kSegment; }

// Computes the n_groups groups group(0) .. group(n_groups - 1) (group(i) is called from several
// threads, and must return the same Group each time), on the backend's threads.
void attend(Backend& be, int64_t n_groups, const std::function<Group(int64_t)>& group, Kernel kernel = Kernel::best);

// One group on the calling thread (the kernels' tests, the benchmark): exactly what attend
// computes for it.
void attend_one(const Group& g, Kernel kernel = Kernel::best);

}  // namespace strata::exec::attn
