// Multi-head latent attention for one decode token on the GPU (deepseek2.md): every head's
// absorbed query (q_abs, C values, and its rotated part q_pe, R values) against the latent cache
// (f16 rows of C + R: the latent, then the rope key), giving each head's attention output in the
// latent space (o_lat, C values) that v_b then maps to the head's value. One block per head.
//
// UNTESTED ON A GPU so far (no device was available when it was written); cuda/tests/
// test_moe_mla.cu checks it against a float64 host reference wherever a GPU exists.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace strata::cuda {

struct MlaDecodeShape {
    int n_head;    // H
    int kv_lora;   // C
    int n_rot;     // R
    int n_kv;      // cached positions to attend (the new token's included)
    float scale;   // kq_scale (mscale^2 / sqrt(qk_nope + R))
};

// Scratch floats mla_decode_attention needs (the scores of every head).
size_t mla_decode_scratch_floats(const MlaDecodeShape& s);

// q_abs [H][C], q_pe [H][R] (float), cache [n_kv][C + R] (half) -> o_lat [H][C].
cudaError_t mla_decode_attention(const float* q_abs, const float* q_pe, const __half* cache, const MlaDecodeShape& s,
                                 float* scratch, float* o_lat, cudaStream_t stream);

}  // namespace strata::cuda
