// The chunked gated delta rule (kda_chunk.cuh). One block per (32 value columns, head), 8 warps;
// in each warp the lane is the value column wherever a column is computed, so that state and
// delta reads are conflict-free rows of 32 floats and the key/query operands are broadcasts.
#include "kda_chunk.cuh"

namespace strata::cuda {
namespace {

constexpr int kTile = 32;     // value columns per block: one per lane
constexpr int kThreads = 256; // 8 warps

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Shared memory, in floats, for head width dk and chunk C (kda_chunk_shared_bytes).
__host__ __device__ size_t shared_floats(int dk, int C) {
    return 3 * size_t(C) * dk      // Q, K, G
           + 2 * size_t(C) * C     // L, Aqk
           + 2 * size_t(C) * kTile // V', O
           + size_t(dk) * kTile    // this block's state columns
           + size_t(C);            // beta
}

__global__ void __launch_bounds__(kThreads)
    kda_chunk_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                     const float* __restrict__ g, const float* __restrict__ beta, float* __restrict__ state,
                     float* __restrict__ o, KdaChunkShape s) {
    extern __shared__ float sh[];
    const int dk = s.head_dim, C = s.chunk, H = s.n_head;
    const int h = int(blockIdx.y), j0 = int(blockIdx.x) * kTile;
    const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32, n_warps = int(blockDim.x) / 32;
    float* Qs = sh;                 // [C][dk] q, then e^G . q
    float* Ks = Qs + C * dk;        // [C][dk] k, then e^G . k, then e^(G_last - G) . k
    float* Gs = Ks + C * dk;        // [C][dk] g, then the cumulative log decay G
    float* Ls = Gs + C * dk;        // [C][C]  L[r][s] = beta_r k_r . (e^(G_r - G_s) . k_s), s < r
    float* As = Ls + C * C;         // [C][C]  Aqk[r][s] = q_r . (e^(G_r - G_s) . k_s), s <= r
    float* Us = As + C * C;         // [C][kTile] beta (v - S0^T e^G k), then the deltas V'
    float* Os = Us + C * kTile;     // [C][kTile] the output's S0 part
    float* Ss = Os + C * kTile;     // [dk][kTile] S[i][j0 + j]
    float* Bs = Ss + dk * kTile;    // [C] beta

    float* S = state + size_t(h) * size_t(dk) * size_t(dk);
    for (int idx = tid; idx < dk * kTile; idx += int(blockDim.x)) {
        const int i = idx / kTile, j = idx % kTile;
        Ss[idx] = S[size_t(i) * size_t(dk) + size_t(j0 + j)];
    }
    // Row r of the chunk starting at token t0, channel c: [T][H][dk].
    auto at = [&](int t0, int r, int c) { return (size_t(t0 + r) * size_t(H) + size_t(h)) * size_t(dk) + size_t(c); };

    for (int t0 = 0; t0 < s.n_tokens; t0 += C) {
        const int m = min(C, s.n_tokens - t0);
        for (int idx = tid; idx < m * dk; idx += int(blockDim.x)) {
            const int r = idx / dk, c = idx % dk;
            const size_t a = at(t0, r, c);
            Qs[idx] = q[a];
            Ks[idx] = k[a];
            Gs[idx] = g[a];
        }
        for (int r = tid; r < m; r += int(blockDim.x)) Bs[r] = beta[size_t(t0 + r) * size_t(H) + size_t(h)];
        __syncthreads();  // also orders the state load before its first use

        // G: the running sum over the chunk's tokens, one thread per key channel.
        for (int c = tid; c < dk; c += int(blockDim.x)) {
            float acc = 0.0f;
            for (int r = 0; r < m; ++r) {
                acc += Gs[r * dk + c];
                Gs[r * dk + c] = acc;
            }
        }
        __syncthreads();

        // L and Aqk: a warp per pair (r, s <= r), lanes across the channels, rows dealt round robin.
        // They share the decayed key e^(G_r - G_s) . k_s, one exponent of a difference <= 0.
        for (int r = warp; r < m; r += n_warps) {
            for (int s2 = 0; s2 <= r; ++s2) {
                float l = 0.0f, a = 0.0f;
                for (int c = lane; c < dk; c += 32) {
                    const float e = expf(Gs[r * dk + c] - Gs[s2 * dk + c]) * Ks[s2 * dk + c];
                    l += Ks[r * dk + c] * e;
                    a += Qs[r * dk + c] * e;
                }
                l = warp_sum(l);
                a = warp_sum(a);
                if (lane == 0) {
                    Ls[r * C + s2] = Bs[r] * l;  // the diagonal is never read
                    As[r * C + s2] = a;
                }
            }
        }
        __syncthreads();

        // e^G . q and e^G . k in place (G <= 0, so at most 1).
        for (int idx = tid; idx < m * dk; idx += int(blockDim.x)) {
            const float e = expf(Gs[idx]);
            Qs[idx] *= e;
            Ks[idx] *= e;
        }
        __syncthreads();

        // The right-hand side beta_r (v_r - S0^T (e^G_r . k_r)), this block's columns.
        for (int r = warp; r < m; r += n_warps) {
            float d = 0.0f;
            for (int i = 0; i < dk; ++i) d += Ss[i * kTile + lane] * Ks[r * dk + i];
            Us[r * kTile + lane] = Bs[r] * (v[at(t0, r, j0 + lane)] - d);
        }
        __syncthreads();

        // Warp 0 solves (I + L) V' = rhs by forward substitution: each lane its own column, reading
        // only rows it wrote itself, so no barrier inside. Meanwhile the other warps take the
        // output's S0 part (e^G_r . q_r)^T S0, which does not wait for V'.
        if (warp == 0) {
            for (int r = 1; r < m; ++r) {
                float x = Us[r * kTile + lane];
                for (int s2 = 0; s2 < r; ++s2) x -= Ls[r * C + s2] * Us[s2 * kTile + lane];
                Us[r * kTile + lane] = x;
            }
        } else {
            for (int r = warp - 1; r < m; r += n_warps - 1) {
                float acc = 0.0f;
                for (int i = 0; i < dk; ++i) acc += Ss[i * kTile + lane] * Qs[r * dk + i];
                Os[r * kTile + lane] = acc;
            }
        }
        __syncthreads();

        // O_r = (S0 part) + sum_{s <= r} Aqk[r][s] v'_s; and, for the state, the keys decayed to the
        // chunk's end, e^(G_last - G_s) . k_s (k read again: Ks holds e^G . k, and e^-G may overflow).
        for (int r = warp; r < m; r += n_warps) {
            float acc = Os[r * kTile + lane];
            for (int s2 = 0; s2 <= r; ++s2) acc += As[r * C + s2] * Us[s2 * kTile + lane];
            o[at(t0, r, j0 + lane)] = acc;
        }
        const float* Glast = Gs + (m - 1) * dk;
        for (int idx = tid; idx < m * dk; idx += int(blockDim.x)) {
            const int r = idx / dk, c = idx % dk;
            Ks[idx] = expf(Glast[c] - Gs[idx]) * k[at(t0, r, c)];
        }
        __syncthreads();

        // S = diag(e^G_last) S0 + sum_s (e^(G_last - G_s) . k_s) v'_s^T: each thread its own entries.
        for (int i = warp; i < dk; i += n_warps) {
            float acc = expf(Glast[i]) * Ss[i * kTile + lane];
            for (int s2 = 0; s2 < m; ++s2) acc += Ks[s2 * dk + i] * Us[s2 * kTile + lane];
            Ss[i * kTile + lane] = acc;
        }
        __syncthreads();  // the next chunk overwrites Q, K, G, V'
    }

    for (int idx = tid; idx < dk * kTile; idx += int(blockDim.x)) {
        const int i = idx / kTile, j = idx % kTile;
        S[size_t(i) * size_t(dk) + size_t(j0 + j)] = Ss[idx];
    }
}

}  // namespace

size_t kda_chunk_shared_bytes(int head_dim, int chunk) { return shared_floats(head_dim, chunk) * sizeof(float); }

cudaError_t kda_chunk_prefill(const float* q, const float* k, const float* v, const float* g, const float* beta,
                              float* state, float* o, const KdaChunkShape& s, cudaStream_t stream) {
    if (!q || !k || !v || !g || !beta || !state || !o || s.n_head < 1 || s.n_head > 65535 || s.head_dim < 32 ||
        s.head_dim > kKdaChunkMaxHeadDim || s.head_dim % 32 != 0 || s.n_tokens < 0 || s.chunk < 1 ||
        s.chunk > kKdaChunkMaxTokens)
        return cudaErrorInvalidValue;
    if (s.n_tokens == 0) return cudaSuccess;
    const size_t bytes = kda_chunk_shared_bytes(s.head_dim, s.chunk);
    int device = 0, optin = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    if (cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device); e != cudaSuccess)
        return e;
    if (bytes > size_t(optin)) return cudaErrorInvalidValue;
    if (cudaError_t e = cudaFuncSetAttribute(kda_chunk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
        e != cudaSuccess)
        return e;
    const dim3 grid(unsigned(s.head_dim / kTile), unsigned(s.n_head));
    kda_chunk_kernel<<<grid, kThreads, bytes, stream>>>(q, k, v, g, beta, state, o, s);
    return cudaGetLastError();
}

}  // namespace strata::cuda
