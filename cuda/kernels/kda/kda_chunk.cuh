// Kimi Delta Attention prefill on the GPU: the chunked form of the gated delta rule
// (lib/model/kimi_linear.md, "Chunked form"; the same math as lib/exec/kda/kda_recurrence.hpp's
// kda_chunk) over T tokens of H heads, the dk x dk state of each head resident on the device and
// carried from chunk to chunk and from call to call. Inputs are what the recurrence takes: q and
// k L2-normalized (q also scaled by 1/sqrt(dk)), the per-channel log decay g (<= 0), beta per
// token and head, v; the output is the recurrence's o (before the output norm and gate).
//
// Per chunk of C tokens: the cumulative log decay G, the lower-triangular L (for the UT
// transform) and Aqk, the per-token deltas V' by forward substitution of (I + L) V' = diag(beta)
// (V - (e^G . K) S0), then O = (e^G . Q) S0 + Aqk V' and S = diag(e^G_last) S0 +
// sum_j (e^(G_last - G_j) . k_j) v'_j^T, every decay one exponent of a difference (<= 0).
// Value columns evolve independently, so each block takes one head and 32 of its value columns
// (grid dk/32 x H) and keeps that slice of the state in shared memory for the whole call.
//
// UNTESTED ON A GPU so far (none was available when this was written): cuda/tests/
// test_kda_chunk.cu checks it against kda_chunk and token-by-token kda_step wherever a GPU exists.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace strata::cuda {

inline constexpr int kKdaChunkTokens = 64;       // C: the tuning choice (fla's chunk size)
inline constexpr int kKdaChunkMaxTokens = 64;    // largest C the shared-memory plan allows
inline constexpr int kKdaChunkMaxHeadDim = 128;  // Kimi-Linear's and K3's head width

struct KdaChunkShape {
    int n_head;    // H >= 1
    int head_dim;  // dk (= dv): 32..128, a multiple of 32
    int n_tokens;  // T >= 0 (0: nothing to do)
    int chunk;     // C: tokens per chunk, 1..kKdaChunkMaxTokens (the last chunk may be shorter)
};

// q, k, v, g, o: [T][H][dk] (token-major, head h at channels h*dk..); beta: [T][H] in (0, 1];
// state: [H][dk][dk], S[h][i][j] with i the key channel and j the value channel (the layout of
// kda.cuh's decode step), read at the start and written back at the end. o must not overlap any
// input (blocks of other value columns still read them). Launch only: returns
// cudaErrorInvalidValue for a bad shape or null pointer without launching, else the launch's
// error; nothing is synchronized.
cudaError_t kda_chunk_prefill(const float* q, const float* k, const float* v, const float* g, const float* beta,
                              float* state, float* o, const KdaChunkShape& s, cudaStream_t stream);

// Dynamic shared memory one block of the launch above takes (164,096 bytes for dk 128, C 64).
size_t kda_chunk_shared_bytes(int head_dim, int chunk);

}  // namespace strata::cuda
