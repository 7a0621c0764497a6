// Decode attention (one new token) over the device KV cache. The key range [0, n_ctx) is cut into
// chunks whose length depends on n_ctx alone (attention_kv.cuh), one block per (chunk, head):
// the grid never depends on the position, so a captured graph replays at every position. Each
// block reads the sequence length from device memory, attends to the keys of its chunk below it
// (a chunk past it writes a neutral state: max -inf, sum 0, output 0) and leaves its partial
// softmax state (running max, sum of exponentials, unnormalized output); a second kernel merges
// the chunks of each head. GQA: head h reads KV head h / (n_head / n_head_kv).
//
// UNTESTED ON A GPU until cuda/tests/test_attention.cu has run on one.
#include <cmath>

#include "attention.cuh"
#include "attention_kv.cuh"

namespace strata::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;

// Block (chunk, h). Warp w takes the chunk's keys w, w + 4, ...; lane l holds dims l + 32 j of
// the query, the output and each key/value head (coalesced: a warp reads 32 consecutive halves,
// or one whole q8_0 block, per j). The four warps' states are merged through shared memory.
template <int D, bool Q8>
__global__ void __launch_bounds__(kThreads) decode_chunk_kernel(const float* q, const uint8_t* k_cache,
                                                                const uint8_t* v_cache, AttentionShape s,
                                                                int64_t chunk_len, int64_t n_chunks,
                                                                const int32_t* n_past, float* part_out,
                                                                float* part_state) {
    constexpr int J = D / 32;
    __shared__ float warp_max_s[kWarps], warp_sum_s[kWarps];
    __shared__ float warp_out_s[kWarps][D];
    const int64_t chunk = blockIdx.x;
    const int h = int(blockIdx.y);
    const int kvh = h / (s.n_head / s.n_head_kv);
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;

    int64_t n_keys = int64_t(*n_past) + 1;  // the new token sees positions 0 .. n_past
    if (n_keys > s.n_ctx) n_keys = s.n_ctx;  // never read past the cache
    const int64_t begin = chunk * chunk_len;
    const int64_t end = begin + chunk_len < n_keys ? begin + chunk_len : n_keys;
    float* out = part_out + (int64_t(h) * n_chunks + chunk) * D;
    float* state = part_state + (int64_t(h) * n_chunks + chunk) * 2;
    if (begin >= end) {  // past the sequence: neutral (the whole block leaves together)
        for (int d = int(threadIdx.x); d < D; d += kThreads) out[d] = 0.0f;
        if (threadIdx.x == 0) state[0] = -INFINITY, state[1] = 0.0f;
        return;
    }

    float qv[J], acc[J];
    for (int j = 0; j < J; ++j) qv[j] = q[int64_t(h) * D + lane + 32 * j], acc[j] = 0.0f;
    float run_max = -INFINITY, run_sum = 0.0f;
    for (int64_t p = begin + warp; p < end; p += kWarps) {
        const uint8_t* kh = attn::head_at<D, Q8>(k_cache, s.row_bytes, p, kvh);
        float dot = 0.0f;
        for (int j = 0; j < J; ++j) dot += qv[j] * attn::head_value<Q8>(kh, lane + 32 * j);
        const float score = warp_sum(dot) * s.scale;  // every lane holds the score
        const float new_max = fmaxf(run_max, score);
        const float corr = attn::rescale(run_max, new_max);
        const float w = expf(score - new_max);
        run_sum = run_sum * corr + w;
        const uint8_t* vh = attn::head_at<D, Q8>(v_cache, s.row_bytes, p, kvh);
        for (int j = 0; j < J; ++j) acc[j] = acc[j] * corr + w * attn::head_value<Q8>(vh, lane + 32 * j);
        run_max = new_max;
    }
    if (lane == 0) warp_max_s[warp] = run_max, warp_sum_s[warp] = run_sum;
    for (int j = 0; j < J; ++j) warp_out_s[warp][lane + 32 * j] = acc[j];
    __syncthreads();

    // A warp that saw no key (a chunk of fewer than four keys) has sum 0 and is left out.
    float m = -INFINITY;
    for (int w = 0; w < kWarps; ++w)
        if (warp_sum_s[w] > 0.0f) m = fmaxf(m, warp_max_s[w]);
    for (int d = int(threadIdx.x); d < D; d += kThreads) {
        float o = 0.0f;
        for (int w = 0; w < kWarps; ++w)
            if (warp_sum_s[w] > 0.0f) o += warp_out_s[w][d] * expf(warp_max_s[w] - m);
        out[d] = o;
    }
    if (threadIdx.x == 0) {
        float l = 0.0f;
        for (int w = 0; w < kWarps; ++w)
            if (warp_sum_s[w] > 0.0f) l += warp_sum_s[w] * expf(warp_max_s[w] - m);
        state[0] = m, state[1] = l;
    }
}

// Block h, thread d: merges the chunk states of head h (every chunk, the neutral ones weigh 0).
template <int D>
__global__ void __launch_bounds__(D) decode_merge_kernel(const float* part_out, const float* part_state,
                                                         int64_t n_chunks, float* out) {
    const int h = int(blockIdx.x), d = int(threadIdx.x);
    const float* state = part_state + int64_t(h) * n_chunks * 2;
    float m = -INFINITY;
    for (int64_t c = 0; c < n_chunks; ++c)
        if (state[2 * c + 1] > 0.0f) m = fmaxf(m, state[2 * c]);
    float o = 0.0f, l = 0.0f;
    for (int64_t c = 0; c < n_chunks; ++c) {
        if (!(state[2 * c + 1] > 0.0f)) continue;
        const float e = expf(state[2 * c] - m);
        l += state[2 * c + 1] * e;
        o += part_out[(int64_t(h) * n_chunks + c) * D + d] * e;
    }
    out[int64_t(h) * D + d] = o / l;
}

template <int D, bool Q8>
void launch(const float* q, const uint8_t* k_cache, const uint8_t* v_cache, const AttentionShape& s,
            const int32_t* n_past, float* part_out, float* part_state, float* out, cudaStream_t stream) {
    const int64_t len = attn::decode_chunk_len(s), chunks = attn::decode_chunks(s);
    decode_chunk_kernel<D, Q8><<<dim3(unsigned(chunks), unsigned(s.n_head)), kThreads, 0, stream>>>(
        q, k_cache, v_cache, s, len, chunks, n_past, part_out, part_state);
    decode_merge_kernel<D><<<unsigned(s.n_head), D, 0, stream>>>(part_out, part_state, chunks, out);
}

}  // namespace

cudaError_t attention_decode(const float* q, const uint8_t* k_cache, const uint8_t* v_cache, const AttentionShape& s,
                             const int32_t* n_past, void* workspace, float* out, cudaStream_t stream) {
    if (!q || !n_past || !workspace || !out || !attn::shape_ok(s) || !attn::cache_aligned(k_cache) ||
        !attn::cache_aligned(v_cache) || s.n_head > 65535 || (reinterpret_cast<uintptr_t>(workspace) & 3u))
        return cudaErrorInvalidValue;
    // Workspace: [n_head][n_chunks][head_dim] outputs, then [n_head][n_chunks][2] (max, sum).
    float* part_out = static_cast<float*>(workspace);
    float* part_state = part_out + size_t(s.n_head) * size_t(attn::decode_chunks(s)) * size_t(s.head_dim);
    if (s.head_dim == 64) {
        if (s.kv_q8_0) launch<64, true>(q, k_cache, v_cache, s, n_past, part_out, part_state, out, stream);
        else launch<64, false>(q, k_cache, v_cache, s, n_past, part_out, part_state, out, stream);
    } else {
        if (s.kv_q8_0) launch<128, true>(q, k_cache, v_cache, s, n_past, part_out, part_state, out, stream);
        else launch<128, false>(q, k_cache, v_cache, s, n_past, part_out, part_state, out, stream);
    }
    return cudaGetLastError();
}

}  // namespace strata::cuda
