#include "mla_attention.cuh"

#include <cfloat>

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;

__device__ float block_reduce(float v, float* shared, bool is_max) {
    for (int offset = 16; offset > 0; offset /= 2) {
        const float o = __shfl_xor_sync(0xffffffffu, v, offset);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < kThreads / 32 ? shared[lane] : (is_max ? -FLT_MAX : 0.0f);
        for (int offset = 16; offset > 0; offset /= 2) {
            const float o = __shfl_xor_sync(0xffffffffu, v, offset);
            v = is_max ? fmaxf(v, o) : v + o;
        }
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    const float result = shared[0];
    __syncthreads();
    return result;
}

// Block h: scores over the cache (one position per thread in turn), softmax, then the weighted
// sum of latents (one latent channel per thread in turn, coalesced over the row).
__global__ void mla_decode_kernel(const float* q_abs, const float* q_pe, const __half* cache, MlaDecodeShape s,
                                  float* scratch, float* o_lat) {
    extern __shared__ float q_shared[];  // C + R: this head's query
    __shared__ float reduce[kThreads / 32];
    const int h = int(blockIdx.x), C = s.kv_lora, R = s.n_rot, W = C + R;
    for (int i = int(threadIdx.x); i < W; i += kThreads)
        q_shared[i] = i < C ? q_abs[size_t(h) * C + i] : q_pe[size_t(h) * R + (i - C)];
    __syncthreads();
    float* scores = scratch + size_t(h) * s.n_kv;
    float local_max = -FLT_MAX;
    for (int p = int(threadIdx.x); p < s.n_kv; p += kThreads) {
        const __half* row = cache + size_t(p) * W;
        float dot = 0.0f;
        for (int i = 0; i < W; ++i) dot += q_shared[i] * __half2float(row[i]);
        scores[p] = dot * s.scale;
        local_max = fmaxf(local_max, scores[p]);
    }
    const float mx = block_reduce(local_max, reduce, true);
    float local_sum = 0.0f;
    for (int p = int(threadIdx.x); p < s.n_kv; p += kThreads) {
        const float e = expf(scores[p] - mx);
        scores[p] = e;
        local_sum += e;
    }
    const float inv = 1.0f / block_reduce(local_sum, reduce, false);
    __syncthreads();  // every score written before any thread reads them all
    for (int c = int(threadIdx.x); c < C; c += kThreads) {
        float acc = 0.0f;
        for (int p = 0; p < s.n_kv; ++p) acc += scores[p] * __half2float(cache[size_t(p) * W + c]);
        o_lat[size_t(h) * C + c] = acc * inv;
    }
}

}  // namespace

size_t mla_decode_scratch_floats(const MlaDecodeShape& s) { return size_t(s.n_head) * size_t(s.n_kv); }

cudaError_t mla_decode_attention(const float* q_abs, const float* q_pe, const __half* cache, const MlaDecodeShape& s,
                                 float* scratch, float* o_lat, cudaStream_t stream) {
    if (!q_abs || !q_pe || !cache || !scratch || !o_lat || s.n_head <= 0 || s.kv_lora <= 0 || s.n_rot <= 0 || s.n_kv <= 0)
        return cudaErrorInvalidValue;
    const size_t shared = size_t(s.kv_lora + s.n_rot) * sizeof(float);
    if (shared > 48 * 1024) return cudaErrorInvalidValue;
    mla_decode_kernel<<<unsigned(s.n_head), kThreads, shared, stream>>>(q_abs, q_pe, cache, s, scratch, o_lat);
    return cudaGetLastError();
}

}  // namespace strata::cuda
