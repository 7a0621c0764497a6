// Prefill attention, flash style: one block per (tile of 16 queries, head); key/value tiles of 32
// positions are dequantized into shared memory (f32) and each query row keeps an online softmax
// (running max and sum, float32), so no score matrix is ever stored. Causal: token t (position
// n_past + t, n_past read from device memory) sees keys 0 .. n_past + t. GQA: head h reads KV head
// h / (n_head / n_head_kv). Plain float32 FMA arithmetic, no tensor cores: the CPU's precision.
//
// UNTESTED ON A GPU until cuda/tests/test_attention.cu has run on one.
#include <cmath>

#include "attention.cuh"
#include "attention_kv.cuh"

namespace strata::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 4;
constexpr int kTileQ = kWarps * kRowsPerWarp;  // 16 queries a block
constexpr int kTileK = 32;                     // one key per lane

// Shared memory for D = 128: 16 x 128 queries + 32 x 129 keys + 32 x 128 values = 41,088 bytes,
// under the 48 KB a kernel may declare statically. The keys' row stride is padded by one float so
// that lane l reading key l at dim d hits bank (l + d) % 32: no conflicts.
template <int D, bool Q8>
__global__ void __launch_bounds__(kThreads) prefill_kernel(const float* q, const uint8_t* k_cache, const uint8_t* v_cache,
                                                           AttentionShape s, int n_tokens, const int32_t* n_past_ptr,
                                                           float* out) {
    constexpr int J = D / 32;
    __shared__ float q_s[kTileQ][D];
    __shared__ float k_s[kTileK][D + 1];
    __shared__ float v_s[kTileK][D];
    const int64_t t0 = int64_t(blockIdx.x) * kTileQ;
    const int h = int(blockIdx.y);
    const int kvh = h / (s.n_head / s.n_head_kv);
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    const int64_t q_stride = int64_t(s.n_head) * D;
    const int64_t n_past = *n_past_ptr;

    // Queries of the tile (rows past n_tokens: zeros, computed but never written).
    for (int i = int(threadIdx.x); i < kTileQ * D; i += kThreads) {
        const int r = i / D, d = i % D;
        const int64_t t = t0 + r;
        q_s[r][d] = t < n_tokens ? q[t * q_stride + int64_t(h) * D + d] : 0.0f;
    }
    // Keys any row of the tile may see, clamped to the cache.
    const int64_t last_t = (t0 + kTileQ < n_tokens ? t0 + kTileQ : int64_t(n_tokens)) - 1;
    int64_t kv_end = n_past + last_t + 1;
    if (kv_end > s.n_ctx) kv_end = s.n_ctx;

    float run_max[kRowsPerWarp], run_sum[kRowsPerWarp], acc[kRowsPerWarp][J];
    for (int r = 0; r < kRowsPerWarp; ++r) {
        run_max[r] = -INFINITY, run_sum[r] = 0.0f;
        for (int j = 0; j < J; ++j) acc[r][j] = 0.0f;
    }

    for (int64_t k0 = 0; k0 < kv_end; k0 += kTileK) {
        __syncthreads();  // the previous tile is consumed (first pass: the queries are staged)
        // Positions past kv_end stage zeros: their weight is 0, and 0 * (stale bytes) could be NaN.
        for (int i = int(threadIdx.x); i < kTileK * D; i += kThreads) {
            const int kk = i / D, d = i % D;
            const int64_t p = k0 + kk;
            float kvalue = 0.0f, vvalue = 0.0f;
            if (p < kv_end) {
                kvalue = attn::head_value<Q8>(attn::head_at<D, Q8>(k_cache, s.row_bytes, p, kvh), d);
                vvalue = attn::head_value<Q8>(attn::head_at<D, Q8>(v_cache, s.row_bytes, p, kvh), d);
            }
            k_s[kk][d] = kvalue;
            v_s[kk][d] = vvalue;
        }
        __syncthreads();

        // Scores of this warp's rows against key k0 + lane.
        float score[kRowsPerWarp];
        for (int r = 0; r < kRowsPerWarp; ++r) score[r] = 0.0f;
        for (int d = 0; d < D; ++d) {
            const float kd = k_s[lane][d];
            for (int r = 0; r < kRowsPerWarp; ++r) score[r] += q_s[warp * kRowsPerWarp + r][d] * kd;
        }
        const int64_t p = k0 + lane;
        float weight[kRowsPerWarp];
        for (int r = 0; r < kRowsPerWarp; ++r) {
            const int64_t t = t0 + warp * kRowsPerWarp + r;
            const bool visible = p < kv_end && p <= n_past + t;
            const float sc = visible ? score[r] * s.scale : -INFINITY;
            const float new_max = fmaxf(run_max[r], warp_max(sc));
            const float corr = attn::rescale(run_max[r], new_max);
            weight[r] = visible ? expf(sc - new_max) : 0.0f;
            run_sum[r] = run_sum[r] * corr + warp_sum(weight[r]);
            for (int j = 0; j < J; ++j) acc[r][j] *= corr;
            run_max[r] = new_max;
        }
        // out += weights . values: key kk's weight comes from lane kk.
        for (int kk = 0; kk < kTileK; ++kk) {
            float wk[kRowsPerWarp];
            for (int r = 0; r < kRowsPerWarp; ++r) wk[r] = __shfl_sync(0xffffffffu, weight[r], kk);
            for (int j = 0; j < J; ++j) {
                const float v = v_s[kk][lane + 32 * j];
                for (int r = 0; r < kRowsPerWarp; ++r) acc[r][j] += wk[r] * v;
            }
        }
    }

    for (int r = 0; r < kRowsPerWarp; ++r) {
        const int64_t t = t0 + warp * kRowsPerWarp + r;
        if (t >= n_tokens) continue;
        float* o = out + t * q_stride + int64_t(h) * D;
        for (int j = 0; j < J; ++j) o[lane + 32 * j] = acc[r][j] / run_sum[r];
    }
}

template <int D, bool Q8>
void launch(const float* q, const uint8_t* k_cache, const uint8_t* v_cache, const AttentionShape& s, int n_tokens,
            const int32_t* n_past, float* out, cudaStream_t stream) {
    const unsigned tiles = unsigned((int64_t(n_tokens) + kTileQ - 1) / kTileQ);
    prefill_kernel<D, Q8><<<dim3(tiles, unsigned(s.n_head)), kThreads, 0, stream>>>(q, k_cache, v_cache, s, n_tokens,
                                                                                    n_past, out);
}

}  // namespace

cudaError_t attention_prefill(const float* q, const uint8_t* k_cache, const uint8_t* v_cache, const AttentionShape& s,
                              int n_tokens, const int32_t* n_past, float* out, cudaStream_t stream) {
    if (n_tokens == 0) return cudaSuccess;
    if (!q || !n_past || !out || n_tokens < 0 || !attn::shape_ok(s) || !attn::cache_aligned(k_cache) ||
        !attn::cache_aligned(v_cache) || s.n_head > 65535)
        return cudaErrorInvalidValue;
    if (s.head_dim == 64) {
        if (s.kv_q8_0) launch<64, true>(q, k_cache, v_cache, s, n_tokens, n_past, out, stream);
        else launch<64, false>(q, k_cache, v_cache, s, n_tokens, n_past, out, stream);
    } else {
        if (s.kv_q8_0) launch<128, true>(q, k_cache, v_cache, s, n_tokens, n_past, out, stream);
        else launch<128, false>(q, k_cache, v_cache, s, n_tokens, n_past, out, stream);
    }
    return cudaGetLastError();
}

}  // namespace strata::cuda
