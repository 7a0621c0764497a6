// What the attention kernels share (internal to cuda/attention*.cu): the shape check, the decode
// split's sizing and reading one value of a cached K or V head exactly as exec::KvCache::load
// gives it (f16: the exact widening; q8_0: the block's f16 scale times the int8, one rounding).
//
// UNTESTED ON A GPU until cuda/tests/test_attention.cu has run on one.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "attention.cuh"
#include "kernels/ops/warp_reduce.cuh"

namespace strata::cuda::attn {

inline constexpr int kQ8Values = 32;  // q8_0: values per block
inline constexpr int kQ8Bytes = 34;   // f16 scale + 32 int8

// The cache row bytes a shape implies (exec::kv_row_bytes), 0 for a shape the kernels refuse.
inline uint64_t expected_row_bytes(const AttentionShape& s) {
    const uint64_t n = uint64_t(s.n_head_kv) * uint64_t(s.head_dim);
    return s.kv_q8_0 ? n / kQ8Values * kQ8Bytes : n * 2;
}

inline bool shape_ok(const AttentionShape& s) {
    return s.n_head > 0 && s.n_head_kv > 0 && s.n_head % s.n_head_kv == 0 && (s.head_dim == 64 || s.head_dim == 128) &&
           (s.kv_q8_0 == 0 || s.kv_q8_0 == 1) && s.n_ctx > 0 && s.row_bytes == expected_row_bytes(s);
}

// The cache stores 2-byte fields (halves, q8_0 scales): the base must be 2-byte aligned
// (row_bytes is even for every valid shape).
inline bool cache_aligned(const uint8_t* p) { return p && (reinterpret_cast<uintptr_t>(p) & 1u) == 0; }

// Decode splits the key range [0, n_ctx) into chunks of a length fixed by n_ctx alone, so the
// grid (and a captured graph) is the same at every position: at least 128 keys a chunk, at most
// 256 chunks a head.
inline constexpr int64_t kDecodeMinChunk = 128;
inline constexpr int64_t kDecodeMaxChunks = 256;

inline int64_t decode_chunk_len(const AttentionShape& s) {
    const int64_t even = (s.n_ctx + kDecodeMaxChunks - 1) / kDecodeMaxChunks;
    return even > kDecodeMinChunk ? even : kDecodeMinChunk;
}

inline int64_t decode_chunks(const AttentionShape& s) {
    const int64_t len = decode_chunk_len(s);
    return (s.n_ctx + len - 1) / len;
}

// Start of KV head kvh of position pos in a cache of rows row_bytes apart.
template <int D, bool Q8>
__device__ __forceinline__ const uint8_t* head_at(const uint8_t* cache, uint64_t row_bytes, int64_t pos, int kvh) {
    const uint64_t head_bytes = Q8 ? uint64_t(D / kQ8Values) * kQ8Bytes : uint64_t(D) * 2;
    return cache + uint64_t(pos) * row_bytes + uint64_t(kvh) * head_bytes;
}

// Value d of a head, exactly as exec::KvCache::load computes it.
template <bool Q8>
__device__ __forceinline__ float head_value(const uint8_t* head, int d) {
    if constexpr (Q8) {
        const uint8_t* block = head + (d / kQ8Values) * kQ8Bytes;
        const float scale = __half2float(*reinterpret_cast<const __half*>(block));
        return __fmul_rn(scale, float(int8_t(block[2 + d % kQ8Values])));
    } else {
        return __half2float(reinterpret_cast<const __half*>(head)[d]);
    }
}


// exp(old - now) for rescaling a running sum when the running max moves from old to now; 1 when
// it does not move (also when both are still -inf: no key seen yet, nothing to rescale).
__device__ __forceinline__ float rescale(float old_max, float new_max) {
    return old_max == new_max ? 1.0f : expf(old_max - new_max);
}

}  // namespace strata::cuda::attn
