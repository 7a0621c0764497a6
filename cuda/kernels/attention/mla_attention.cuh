// Multi-head latent attention on the GPU (lib/model/deepseek2.md, the absorbed form; the CPU's
// exec::Context::attention_scores_mla): the latent cache holds, per position, the normalized
// latent (C values) and the rope key (R values, rotated or not as the model says) as f16; every
// head's absorbed query (q_abs, C values) and its rope part (q_pe, R values) are scored against
// all cached positions up to its own (causal), softmaxed, and the latents mixed into the head's
// output in the latent space (o_lat, C values), which v_b then maps to the head's value.
//
// Positions come from device memory (pos0: the sequence's n_past), so a decode step captured
// once as a CUDA graph replays at every position. No scratch in global memory: the softmax is
// computed online (running max and sum) over tiles of cached positions.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_moe_mla.cu checks it against
// a float64 host reference).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace strata::cuda {

inline constexpr int kMlaMaxLatent = 1024;  // C: Kimi K2/K3 and DeepSeek use 512
inline constexpr int kMlaMaxRope = 128;     // R: 64 in those models (0 allowed: no rope part)

struct MlaAttentionShape {
    int n_head;       // H >= 1
    int kv_lora;      // C: 1..kMlaMaxLatent
    int n_rot;        // R: 0..kMlaMaxRope; a cache row is C + R halves
    int n_tokens;     // m >= 1: the new tokens, at positions *pos0 .. *pos0 + m - 1
    int q_stride;     // floats from one token's query row to the next (H * (qk_nope + R))
    int q_head_stride;  // floats from one head's query to the next within a row (qk_nope + R)
    int q_pe_offset;    // where a head's rope part starts within its query (qk_nope)
    float scale;      // kq_scale
};

// Writes the n_tokens rows of ckv ([m][C + R] floats: latent then rope key) into the cache
// ([n_ctx][C + R] halves) at positions *pos0 + t. The caller guarantees *pos0 + m <= n_ctx.
cudaError_t mla_cache_store(const float* ckv, int n_tokens, int width, const int32_t* pos0, __half* cache,
                            cudaStream_t stream);

// q_abs: [H][m][C] (head-major: the per-head products write each head's tokens contiguously);
// q: the query rows ([m][q_stride], head h's rope part at h * q_head_stride + q_pe_offset);
// cache: positions 0 .. *pos0 + m - 1 already stored (the new tokens' included). Token t attends
// positions 0 .. *pos0 + t. o_lat: [H][m][C] (head-major, as v_b's per-head products read it).
// Launch only (nothing synchronized); cudaErrorInvalidValue for a bad shape or null pointer.
cudaError_t mla_attention(const float* q_abs, const float* q, const __half* cache, const int32_t* pos0,
                          const MlaAttentionShape& s, float* o_lat, cudaStream_t stream);

}  // namespace strata::cuda
