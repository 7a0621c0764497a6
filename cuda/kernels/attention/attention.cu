// kv_store (the new positions' K and V rows into the device cache, byte for byte as
// exec::KvCache::store writes them), the workspace size and the choice between the decode and
// prefill kernels (attention_decode.cu, attention_prefill.cu). Launch-only: no allocation, no
// synchronization; positions are read on the device.
//
// UNTESTED ON A GPU until cuda/tests/test_ops.cu and test_attention.cu have run on one.
#include "attention.cuh"

#include "attention_kv.cuh"
#include "quant/half.hpp"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;

// f16 rows: one thread per value, rounded to nearest even by the CPU's own f32_to_f16.
__global__ void kv_store_f16_kernel(const float* k, const float* v, int n_tokens, int64_t row_values, uint8_t* k_cache,
                                    uint8_t* v_cache, uint64_t row_bytes, int64_t n_ctx, const int32_t* n_past) {
    const uint64_t total = uint64_t(n_tokens) * uint64_t(row_values);
    const uint64_t stride = uint64_t(gridDim.x) * kThreads;
    const int64_t first = *n_past;
    for (uint64_t u = uint64_t(blockIdx.x) * kThreads + threadIdx.x; u < total; u += stride) {
        const int64_t t = int64_t(u / uint64_t(row_values)), i = int64_t(u % uint64_t(row_values));
        const int64_t pos = first + t;
        if (pos < 0 || pos >= n_ctx) continue;  // never write outside the cache
        reinterpret_cast<uint16_t*>(k_cache + uint64_t(pos) * row_bytes)[i] = quant::f32_to_f16(k[u]);
        reinterpret_cast<uint16_t*>(v_cache + uint64_t(pos) * row_bytes)[i] = quant::f32_to_f16(v[u]);
    }
}

// The float operations of quant::quantize_row_q8_0 (ggml's reference quantizer) in its order,
// each explicitly rounded, so the block's bytes are the CPU's.
__device__ void quantize_block_q8_0(const float* x, uint8_t* block) {
    float amax = 0.0f;
    for (int j = 0; j < attn::kQ8Values; ++j) {
        const float ax = fabsf(x[j]);
        amax = amax > ax ? amax : ax;
    }
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    *reinterpret_cast<uint16_t*>(block) = quant::f32_to_f16(d);
    for (int j = 0; j < attn::kQ8Values; ++j) block[2 + j] = uint8_t(int8_t(roundf(__fmul_rn(x[j], id))));
}

// q8_0 rows: one thread per block of 32 values (the sequential max over the block is part of
// the exact result), the K and V blocks of the same place together.
__global__ void kv_store_q8_0_kernel(const float* k, const float* v, int n_tokens, int64_t row_values, uint8_t* k_cache,
                                     uint8_t* v_cache, uint64_t row_bytes, int64_t n_ctx, const int32_t* n_past) {
    const int64_t blocks_per_row = row_values / attn::kQ8Values;
    const uint64_t total = uint64_t(n_tokens) * uint64_t(blocks_per_row);
    const uint64_t stride = uint64_t(gridDim.x) * kThreads;
    const int64_t first = *n_past;
    for (uint64_t u = uint64_t(blockIdx.x) * kThreads + threadIdx.x; u < total; u += stride) {
        const int64_t t = int64_t(u / uint64_t(blocks_per_row)), b = int64_t(u % uint64_t(blocks_per_row));
        const int64_t pos = first + t;
        if (pos < 0 || pos >= n_ctx) continue;
        const uint64_t src = uint64_t(t) * uint64_t(row_values) + uint64_t(b) * attn::kQ8Values;
        const uint64_t dst = uint64_t(pos) * row_bytes + uint64_t(b) * attn::kQ8Bytes;
        quantize_block_q8_0(k + src, k_cache + dst);
        quantize_block_q8_0(v + src, v_cache + dst);
    }
}

unsigned blocks_for(uint64_t n) {
    const uint64_t b = (n + kThreads - 1) / kThreads;
    return unsigned(b < 65536u ? b : 65536u);  // the kernels loop over the rest
}

}  // namespace

cudaError_t kv_store(const float* k, const float* v, int n_tokens, uint8_t* k_cache, uint8_t* v_cache,
                     const AttentionShape& s, const int32_t* n_past, cudaStream_t stream) {
    if (n_tokens == 0) return cudaSuccess;
    if (!k || !v || !n_past || n_tokens < 0 || !attn::shape_ok(s) || !attn::cache_aligned(k_cache) ||
        !attn::cache_aligned(v_cache))
        return cudaErrorInvalidValue;
    const int64_t row_values = int64_t(s.n_head_kv) * s.head_dim;
    if (s.kv_q8_0) {
        const uint64_t n = uint64_t(n_tokens) * uint64_t(row_values / attn::kQ8Values);
        kv_store_q8_0_kernel<<<blocks_for(n), kThreads, 0, stream>>>(k, v, n_tokens, row_values, k_cache, v_cache,
                                                                     s.row_bytes, s.n_ctx, n_past);
    } else {
        const uint64_t n = uint64_t(n_tokens) * uint64_t(row_values);
        kv_store_f16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(k, v, n_tokens, row_values, k_cache, v_cache,
                                                                    s.row_bytes, s.n_ctx, n_past);
    }
    return cudaGetLastError();
}

size_t attention_workspace_bytes(const AttentionShape& s, int n_tokens) {
    if (n_tokens != 1 || !attn::shape_ok(s)) return 0;
    // Per head and chunk: the unnormalized output (head_dim floats), the running max and sum.
    return size_t(s.n_head) * size_t(attn::decode_chunks(s)) * size_t(s.head_dim + 2) * sizeof(float);
}

cudaError_t attention(const float* q, const uint8_t* k_cache, const uint8_t* v_cache, const AttentionShape& s,
                      int n_tokens, const int32_t* n_past, void* workspace, float* out, cudaStream_t stream) {
    if (n_tokens == 1) return attention_decode(q, k_cache, v_cache, s, n_past, workspace, out, stream);
    return attention_prefill(q, k_cache, v_cache, s, n_tokens, n_past, out, stream);
}

}  // namespace strata::cuda
