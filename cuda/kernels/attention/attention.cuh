// Grouped-query attention over a device KV cache (llama family), the CPU's arithmetic
// (lib/exec/context/context.cpp attention_scores_gqa) in a decode kernel (one new token: key range split
// over blocks, partial softmax states merged) and a flash-style prefill kernel (query tiles,
// key tiles through shared memory, online softmax). Causal: token t (position *n_past + t) sees
// positions 0 .. *n_past + t. Head dims 64 and 128 (others: cudaErrorInvalidValue).
// The cache stores K and V rows per position as f16, or q8_0 blocks of 32 per head quantized
// byte-for-byte as the CPU's KvCache does.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_attention.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace strata::cuda {

struct AttentionShape {
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    int kv_q8_0 = 0;         // 0: f16 rows, 1: q8_0 rows
    uint64_t row_bytes = 0;  // bytes of one position's K (or V) row: exec::kv_row_bytes
    int64_t n_ctx = 0;       // positions the cache holds (the decode split is sized from it)
    float scale = 0.0f;      // 1/sqrt(head_dim)
};

// Stores k, v [n_tokens][n_head_kv * head_dim] at positions *n_past .. *n_past + n_tokens - 1 of
// one layer's caches k_cache, v_cache ([n_ctx][row_bytes] each).
cudaError_t kv_store(const float* k, const float* v, int n_tokens, uint8_t* k_cache, uint8_t* v_cache,
                     const AttentionShape& s, const int32_t* n_past, cudaStream_t stream);

// Workspace bytes attention needs (decode split partials); the same for every n_past.
size_t attention_workspace_bytes(const AttentionShape& s, int n_tokens);

// out [n_tokens][n_head * head_dim] = softmax(q k^T * scale) v per head, for q of the same shape,
// against a cache that already holds the n_tokens new positions.
cudaError_t attention(const float* q, const uint8_t* k_cache, const uint8_t* v_cache, const AttentionShape& s,
                      int n_tokens, const int32_t* n_past, void* workspace, float* out, cudaStream_t stream);

// The two paths attention() chooses between (one token: decode, otherwise prefill), callable
// alone so tests can run both on the same inputs. Decode takes one token and the workspace of
// attention_workspace_bytes(s, 1); prefill any n_tokens and none.
cudaError_t attention_decode(const float* q, const uint8_t* k_cache, const uint8_t* v_cache, const AttentionShape& s,
                             const int32_t* n_past, void* workspace, float* out, cudaStream_t stream);
cudaError_t attention_prefill(const float* q, const uint8_t* k_cache, const uint8_t* v_cache, const AttentionShape& s,
                              int n_tokens, const int32_t* n_past, float* out, cudaStream_t stream);

}  // namespace strata::cuda
