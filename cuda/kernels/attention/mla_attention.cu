// Multi-token causal MLA attention over the f16 latent cache (mla_attention.cuh; the CPU's
// exec::Context::attention_scores_mla), and the store of new latent rows into that cache.
//
// One block per (head, tile of T consecutive tokens); the block walks the cached positions its
// last token sees in tiles of kTile, keeping per token an online softmax (running max and sum in
// shared memory, the unnormalized output in registers). Per tile, three phases between barriers:
//   scores:     warp w scores positions w * 8 .. w * 8 + 7 of the tile (a lane reads every 32nd
//               half2 of a row: coalesced), each against the block's T queries (shared memory),
//               masked causally per token (-inf);
//   softmax:    warp j updates token j's running max and sum and turns the tile's scores into
//               weights, leaving the factor that rescales the token's accumulator;
//   accumulate: thread i owns latent channels (pairs) i, i + 256, ... of every token and adds the
//               weighted latents of the tile's positions (the rows just read: L1/L2 hits).
// T = 1 for decode and short batches (one cache read per head and token), T = 8 for prefill
// (one cache read serves eight tokens). Rows are read as half2 when C and R are even and the
// cache is 4-byte aligned, as single halves otherwise (odd widths: correct, not tuned).
//
// No global scratch: the position range is not split over blocks, so decode runs H blocks, each
// reading the whole cache (through L2, shared by the heads).
//
// UNTESTED ON A GPU until cuda/tests/test_moe_mla.cu has run on one.
#include "mla_attention.cuh"

#include <cmath>

#include "quant/half.hpp"
#include "kernels/ops/warp_reduce.cuh"

namespace strata::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 64;                                // cached positions per softmax update
constexpr int kRowsPerWarp = kTile / kWarps;             // scored by one warp per tile
constexpr int kAccPerThread = kMlaMaxLatent / kThreads;  // latent channels a thread owns per token
constexpr int kPrefillTokens = 8;                        // T of the prefill instantiation
constexpr int kPrefillFromTokens = 16;                   // m from which it runs (a guess, unmeasured)
static_assert(kMlaMaxLatent % (2 * kThreads) == 0, "channel pairs split evenly over the threads");
static_assert(kTile % 32 == 0 && kTile % kWarps == 0, "a softmax lane takes kTile / 32 positions");
// Shared memory of the largest block: the queries plus the score and weight tiles.
static_assert(kPrefillTokens * (kMlaMaxLatent + kMlaMaxRope) * 4 + 2 * kPrefillTokens * kTile * 4 + 3 * 32 * 4 <=
                  48 * 1024,
              "fits the 48 KB a kernel gets without opting in");


// How a cache row is read: kWidth consecutive values per load ("slot"). PAIRS: half2 (C and R
// even, cache 4-byte aligned, so every row and its rope part start on a pair); otherwise one half.
template <bool PAIRS>
struct Slots;

template <>
struct Slots<true> {
    static constexpr int kWidth = 2;
    using Raw = __half2;
    __device__ static Raw load(const __half* row, int i) { return reinterpret_cast<const __half2*>(row)[i]; }
    __device__ static Raw zero() { return __float2half2_rn(0.0f); }
    __device__ static void widen(Raw r, float* out) {
        const float2 f = __half22float2(r);
        out[0] = f.x, out[1] = f.y;
    }
    // Slot i of a query row in shared memory (the row starts 8-byte aligned: W even).
    __device__ static float dot(const float* q_row, int i, Raw r) {
        const float2 f = __half22float2(r);
        const float2 q = reinterpret_cast<const float2*>(q_row)[i];
        return q.x * f.x + q.y * f.y;
    }
};

template <>
struct Slots<false> {
    static constexpr int kWidth = 1;
    using Raw = __half;
    __device__ static Raw load(const __half* row, int i) { return row[i]; }
    __device__ static Raw zero() { return __float2half(0.0f); }
    __device__ static void widen(Raw r, float* out) { out[0] = __half2float(r); }
    __device__ static float dot(const float* q_row, int i, Raw r) { return q_row[i] * __half2float(r); }
};

// Block (h, token tile): tokens t0 .. t0 + T - 1 of head h (those past m: masked, never written).
// Dynamic shared memory: the T queries, [T][C + R] floats (latent part from q_abs, rope part from
// q). Rows in flight per warp in the score phase: kGroup (its loads issued before any use).
template <int T, bool PAIRS>
__global__ void __launch_bounds__(kThreads)
    mla_attention_kernel(const float* __restrict__ q_abs, const float* __restrict__ q, const __half* __restrict__ cache,
                         const int32_t* __restrict__ pos0, MlaAttentionShape s, float* __restrict__ o_lat) {
    using S = Slots<PAIRS>;
    constexpr int kRowSlots = (kMlaMaxLatent + kMlaMaxRope) / S::kWidth / 32;  // per lane, at most
    constexpr int kAccSlots = kAccPerThread / S::kWidth;
    constexpr int kGroup = PAIRS ? (T == 1 ? 4 : 2) : 1;
    static_assert(kRowsPerWarp % kGroup == 0, "groups split a warp's rows evenly");
    static_assert(T <= kWarps, "the softmax phase gives each token one warp");

    extern __shared__ float q_s[];  // [T][W]
    __shared__ float score_s[T][kTile];
    __shared__ float weight_s[T][kTile];
    __shared__ float max_s[T], sum_s[T], corr_s[T];

    const int C = s.kv_lora, R = s.n_rot, W = C + R, m = s.n_tokens;
    const int row_slots = W / S::kWidth, latent_slots = C / S::kWidth;
    const int h = int(blockIdx.x), t0 = int(blockIdx.y) * T;
    const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
    const int n_valid = m - t0 < T ? m - t0 : T;
    const int32_t past = *pos0;
    const int64_t n_past = past > 0 ? past : 0;  // a negative position would index before the cache
    const int64_t end = n_past + t0 + n_valid;   // positions the block's last token sees

    for (int idx = tid; idx < T * W; idx += kThreads) {
        const int j = idx / W, i = idx % W;
        const int64_t t = t0 + j;
        float v = 0.0f;  // tokens past m: zeros (masked anyway)
        if (j < n_valid)
            v = i < C ? q_abs[(int64_t(h) * m + t) * C + i]
                      : q[t * s.q_stride + int64_t(h) * s.q_head_stride + s.q_pe_offset + (i - C)];
        q_s[idx] = v;
    }
    if (tid < T) max_s[tid] = -INFINITY, sum_s[tid] = 0.0f;
    __syncthreads();

    float acc[T][kAccPerThread];
#pragma unroll
    for (int j = 0; j < T; ++j)
#pragma unroll
        for (int k = 0; k < kAccPerThread; ++k) acc[j][k] = 0.0f;

    for (int64_t p0 = 0; p0 < end; p0 += kTile) {  // the same trip count in every thread
        // Scores: this warp's rows of the tile, kGroup at a time (loads first, then the dots).
        for (int g = 0; g < kRowsPerWarp; g += kGroup) {
            typename S::Raw raw[kGroup][kRowSlots];
#pragma unroll
            for (int r = 0; r < kGroup; ++r) {
                const int64_t p = p0 + warp * kRowsPerWarp + g + r;
                const __half* row = cache + p * W;
#pragma unroll
                for (int k = 0; k < kRowSlots; ++k) {
                    const int i = lane + 32 * k;
                    raw[r][k] = p < end && i < row_slots ? S::load(row, i) : S::zero();
                }
            }
#pragma unroll
            for (int r = 0; r < kGroup; ++r) {
                const int pp = warp * kRowsPerWarp + g + r;
                const int64_t p = p0 + pp;
                float dot[T];
#pragma unroll
                for (int j = 0; j < T; ++j) dot[j] = 0.0f;
                if (p < end) {  // warp-uniform: the shuffles below see every lane
#pragma unroll
                    for (int k = 0; k < kRowSlots; ++k) {
                        const int i = lane + 32 * k;
                        if (i < row_slots) {
#pragma unroll
                            for (int j = 0; j < T; ++j) dot[j] += S::dot(q_s + j * W, i, raw[r][k]);
                        }
                    }
#pragma unroll
                    for (int j = 0; j < T; ++j) dot[j] = warp_sum(dot[j]);
                }
#pragma unroll
                for (int j = 0; j < T; ++j)
                    if (lane == j) score_s[j][pp] = j < n_valid && p <= n_past + t0 + j ? dot[j] * s.scale : -INFINITY;
            }
        }
        __syncthreads();

        // Softmax: warp j moves token j's running max and sum over the tile.
        for (int j = warp; j < T; j += kWarps) {
            float sc[kTile / 32];
            float tile_max = -INFINITY;
#pragma unroll
            for (int k = 0; k < kTile / 32; ++k) sc[k] = score_s[j][lane + 32 * k], tile_max = fmaxf(tile_max, sc[k]);
            tile_max = warp_max(tile_max);
            const float old_max = max_s[j];
            const float new_max = fmaxf(old_max, tile_max);  // -inf only for a token past m
            float part = 0.0f;
#pragma unroll
            for (int k = 0; k < kTile / 32; ++k) {
                const float w = sc[k] == -INFINITY ? 0.0f : expf(sc[k] - new_max);
                weight_s[j][lane + 32 * k] = w;
                part += w;
            }
            part = warp_sum(part);
            __syncwarp();  // every lane has read max_s[j] before lane 0 replaces it
            if (lane == 0) {
                const float corr = old_max == -INFINITY ? 0.0f : expf(old_max - new_max);
                max_s[j] = new_max;
                sum_s[j] = sum_s[j] * corr + part;
                corr_s[j] = corr;
            }
        }
        __syncthreads();

        // Accumulate: rescale, then add the weighted latents of the tile's positions. The next
        // tile's score phase writes only score_s, which this phase does not read, and its softmax
        // phase (which rewrites weight_s and corr_s) starts after a barrier this phase precedes.
#pragma unroll
        for (int j = 0; j < T; ++j) {
            const float corr = corr_s[j];
#pragma unroll
            for (int k = 0; k < kAccPerThread; ++k) acc[j][k] *= corr;
        }
        const int n_rows = end - p0 < kTile ? int(end - p0) : kTile;  // never past the stored rows
#pragma unroll 4
        for (int pp = 0; pp < n_rows; ++pp) {
            const __half* row = cache + (p0 + pp) * W;
            float v[kAccPerThread];
#pragma unroll
            for (int k = 0; k < kAccSlots; ++k) {
                const int i = tid + kThreads * k;
                if (i < latent_slots) {
                    S::widen(S::load(row, i), v + k * S::kWidth);
                } else {
#pragma unroll
                    for (int e = 0; e < S::kWidth; ++e) v[k * S::kWidth + e] = 0.0f;
                }
            }
#pragma unroll
            for (int j = 0; j < T; ++j) {
                const float w = weight_s[j][pp];
#pragma unroll
                for (int k = 0; k < kAccPerThread; ++k) acc[j][k] += w * v[k];
            }
        }
    }

    // sum_s was last written before the last tile's second barrier: visible here.
#pragma unroll
    for (int j = 0; j < T; ++j) {
        if (j >= n_valid) break;
        const float inv = 1.0f / sum_s[j];
        float* out = o_lat + (int64_t(h) * m + t0 + j) * C;
#pragma unroll
        for (int k = 0; k < kAccSlots; ++k) {
            const int i = tid + kThreads * k;
            if (i >= latent_slots) continue;
#pragma unroll
            for (int e = 0; e < S::kWidth; ++e) out[i * S::kWidth + e] = acc[j][k * S::kWidth + e] * inv;
        }
    }
}

// One thread per value, rounded to nearest even as the CPU's LatentCache::store does.
__global__ void mla_cache_store_kernel(const float* ckv, int n_tokens, int width, const int32_t* pos0, __half* cache) {
    const uint64_t total = uint64_t(n_tokens) * uint64_t(width);
    const uint64_t stride = uint64_t(gridDim.x) * kThreads;
    const int64_t first = *pos0;
    auto* out = reinterpret_cast<uint16_t*>(cache);
    for (uint64_t u = uint64_t(blockIdx.x) * kThreads + threadIdx.x; u < total; u += stride) {
        const int64_t t = int64_t(u / uint64_t(width)), i = int64_t(u % uint64_t(width));
        if (first + t < 0) continue;  // never write before the cache
        out[(first + t) * width + i] = quant::f32_to_f16(ckv[u]);
    }
}

bool shape_ok(const MlaAttentionShape& s) {
    if (s.n_head < 1 || s.kv_lora < 1 || s.kv_lora > kMlaMaxLatent || s.n_rot < 0 || s.n_rot > kMlaMaxRope ||
        s.n_tokens < 1 || !std::isfinite(s.scale))
        return false;
    if (s.n_rot == 0) return true;  // the rope strides are never used
    // A head's rope part lies within its query, and the last head's within the token's row.
    const int64_t rope_end = int64_t(s.q_pe_offset) + s.n_rot;
    return s.q_pe_offset >= 0 && s.q_head_stride >= rope_end &&
           s.q_stride >= int64_t(s.n_head - 1) * s.q_head_stride + rope_end;
}

template <int T, bool PAIRS>
void launch(const float* q_abs, const float* q, const __half* cache, const int32_t* pos0, const MlaAttentionShape& s,
            float* o_lat, cudaStream_t stream) {
    const dim3 grid(unsigned(s.n_head), unsigned((s.n_tokens + T - 1) / T));
    const size_t shared = size_t(T) * size_t(s.kv_lora + s.n_rot) * sizeof(float);
    mla_attention_kernel<T, PAIRS><<<grid, kThreads, shared, stream>>>(q_abs, q, cache, pos0, s, o_lat);
}

}  // namespace

cudaError_t mla_cache_store(const float* ckv, int n_tokens, int width, const int32_t* pos0, __half* cache,
                            cudaStream_t stream) {
    if (!ckv || !pos0 || !cache || n_tokens < 1 || width < 1) return cudaErrorInvalidValue;
    const uint64_t total = uint64_t(n_tokens) * uint64_t(width);
    const uint64_t blocks = (total + kThreads - 1) / kThreads;
    mla_cache_store_kernel<<<unsigned(blocks < 4096 ? blocks : 4096), kThreads, 0, stream>>>(ckv, n_tokens, width, pos0,
                                                                                             cache);
    return cudaGetLastError();
}

cudaError_t mla_attention(const float* q_abs, const float* q, const __half* cache, const int32_t* pos0,
                          const MlaAttentionShape& s, float* o_lat, cudaStream_t stream) {
    if (!q_abs || !q || !cache || !pos0 || !o_lat || !shape_ok(s)) return cudaErrorInvalidValue;
    const bool prefill = s.n_tokens >= kPrefillFromTokens;
    const int64_t token_blocks = prefill ? (int64_t(s.n_tokens) + kPrefillTokens - 1) / kPrefillTokens : s.n_tokens;
    if (token_blocks > 65535 || reinterpret_cast<uintptr_t>(cache) % 2 != 0) return cudaErrorInvalidValue;
    const bool pairs = s.kv_lora % 2 == 0 && s.n_rot % 2 == 0 && reinterpret_cast<uintptr_t>(cache) % 4 == 0;
    if (prefill) {
        if (pairs) launch<kPrefillTokens, true>(q_abs, q, cache, pos0, s, o_lat, stream);
        else launch<kPrefillTokens, false>(q_abs, q, cache, pos0, s, o_lat, stream);
    } else {
        if (pairs) launch<1, true>(q_abs, q, cache, pos0, s, o_lat, stream);
        else launch<1, false>(q_abs, q, cache, pos0, s, o_lat, stream);
    }
    return cudaGetLastError();
}

}  // namespace strata::cuda
