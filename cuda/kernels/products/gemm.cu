// Prefill kernels (gemm.cuh): f32 -> f16 activations and the tensor-core product of every
// quantized type (the f16 weight panels for cuBLAS: dequant.cu). UNTESTED ON A GPU (written without
// one; see test_gemm.cpp).
#include "gemm.cuh"

#include <algorithm>

#include "runtime/gpu_types.hpp"
#include "qtables_device.cuh"
#include "qtype_decode.cuh"
#include "quant/half.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/type_ids.hpp"
#include "quant/type_traits.hpp"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void f32_to_f16_kernel(const float* x, size_t n, __half* out) {
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        out[i] = __float2half_rn(x[i]);
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    return uint32_t(__half_as_ushort(__float2half_rn(lo))) | uint32_t(__half_as_ushort(__float2half_rn(hi))) << 16;
}

// Eight floats rounded to f16 (round to nearest even, as quant::f32_to_f16), as one 16-byte store.
__device__ __forceinline__ uint4 pack8_f16(const float v[8]) {
    return make_uint4(pack_half2(v[0], v[1]), pack_half2(v[2], v[3]), pack_half2(v[4], v[5]), pack_half2(v[6], v[7]));
}

// ---------------------------------------------------------------------------------------------
// gemm_mma. One block computes a tile of 128 tokens x 128 weight rows with 8 warps, each a
// 64 x 32 sub-tile of m16n8k16 MMAs (f16 in, f32 accumulate): the tokens are the MMA's M (A =
// activations, row-major [token][k]) and the weight rows its N (B = W, "col" layout = W row-major
// [row][k]), so an accumulator fragment is y [token][row] directly. The k dimension runs in chunks
// of 64 (a quarter of a 256-weight block, two 32-weight blocks) through two shared-memory stages:
// while the warps multiply chunk c, the activation tile of c+1 arrives by cp.async and, after the
// multiply, the weights of c+1 are decoded (the type's decode8, qtype_decode.cuh: bit for bit
// lib/quant's decoder, then rounded to f16) into the other stage; one barrier a chunk. IQ1_S and
// IQ1_M keep their 16 KiB grid in shared memory (copied per block), the other types read their
// (smaller) tables from global memory through L1. For IQ1_S the blocks of the next 256 columns are
// prefetched into L1 so the decode rarely waits on memory. One instantiation per quantized type.
// Shared rows are padded to 72 halves (144 bytes), so the eight 16-byte rows an ldmatrix reads fall
// in distinct banks. 72 KiB of shared memory (90 KiB with the
// grid), two blocks per SM on sm_90, one on sm_121 (GB10: 99 KiB a block at most).

constexpr int kTileTok = 128;
constexpr int kTileRows = 128;
constexpr int kChunk = 64;
constexpr int kPitch = kChunk + 8;
constexpr int kMmaThreads = 256;
constexpr int kGridBytes = quant::kIq1sGridSize * 8;
constexpr int kStageHalves = kTileTok * kPitch;  // one stage of one operand (kTileRows == kTileTok)
static_assert(kTileRows == kTileTok, "one stage size serves both operands");
static_assert(kTileTok * kChunk / 8 == 4 * kMmaThreads, "each thread copies four 16-byte pieces a chunk");
static_assert(kTileRows * kChunk / 8 == 4 * kMmaThreads, "each thread decodes four groups a chunk");
static_assert(quant::kQK_K % kChunk == 0, "the IQ1_S prefetch runs on 256-column block boundaries");

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gmem_src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem_dst)), "l"(gmem_src) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, register i receives it.
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const __half* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p))
                 : "memory");
}

__device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Activations of chunk c: 128 token rows x 64 halves, as 1024 16-byte cp.async (4 per thread).
// Tokens past the last are clamped to it (valid memory; their outputs are never stored).
__device__ __forceinline__ void load_x_chunk(__half* stage, const __half* x, int64_t cols, int64_t tok0,
                                             int n_tokens, int c) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int p = int(threadIdx.x) + kMmaThreads * j;
        const int t = p >> 3, piece = p & 7;
        const int64_t token = std::min<int64_t>(tok0 + t, int64_t(n_tokens) - 1);
        cp_async16(stage + t * kPitch + piece * 8, x + token * cols + int64_t(c) * kChunk + piece * 8);
    }
}

// Types whose decode keeps the 2048-entry IQ1_S grid in shared memory.
constexpr bool smem_grid(uint32_t type) { return type == quant::kTypeIQ1_S || type == quant::kTypeIQ1_M; }

template <uint32_t kType>
constexpr int mma_smem_bytes() {
    return (smem_grid(kType) ? kGridBytes : 0) + 4 * kStageHalves * 2;
}

// Weights of chunk c: 128 rows x 8 groups of eight, decoded to f16 (4 groups per thread). Rows
// past the matrix are zeros.
template <uint32_t kType>
__device__ __forceinline__ void decode_w_chunk(__half* stage, const uint8_t* w, uint64_t row_bytes, int64_t rows,
                                               int64_t row0, const QTables& tab, int c) {
    const int64_t group = int64_t(c) * (kChunk / 8) + int(threadIdx.x & 7);  // along the row
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int r = int(threadIdx.x >> 3) + 32 * j;
        uint4 packed = make_uint4(0, 0, 0, 0);
        if (row0 + r < rows) {
            float v[8];
            decode_row_group<kType>(w + uint64_t(row0 + r) * row_bytes, group, tab, v);
            packed = pack8_f16(v);
        }
        *reinterpret_cast<uint4*>(stage + r * kPitch + (threadIdx.x & 7) * 8) = packed;
    }
}

template <uint32_t kType>
__global__ void __launch_bounds__(kMmaThreads, 2)
    gemm_mma_kernel(const uint8_t* w, uint64_t row_bytes, int64_t rows, int64_t cols, const __half* x, int n_tokens,
                    float* y) {
    constexpr int kGrid = smem_grid(kType) ? kGridBytes : 0;
    extern __shared__ __align__(16) unsigned char smem[];
    __half* xs = reinterpret_cast<__half*>(smem + kGrid);  // [2][kTileTok][kPitch]
    __half* ws = xs + 2 * kStageHalves;                    // [2][kTileRows][kPitch]

    const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
    const int64_t row0 = int64_t(blockIdx.x) * kTileRows;
    const int64_t tok0 = int64_t(blockIdx.y) * kTileTok;
    const int n_chunks = int(cols / kChunk);
    const int n_blocks = int(cols / quant::kQK_K);

    QTables tab = device_qtables();
    if constexpr (smem_grid(kType)) {
        uint64_t* grid = reinterpret_cast<uint64_t*>(smem);
        for (int i = tid; i < quant::kIq1sGridSize; i += kMmaThreads) grid[i] = kDevIq1sGrid[i];
        tab.iq1s_grid = grid;
    }
    load_x_chunk(xs, x, cols, tok0, n_tokens, 0);
    cp_async_commit();
    __syncthreads();  // the grid table is complete before any decode reads it
    decode_w_chunk<kType>(ws, w, row_bytes, rows, row0, tab, 0);
    cp_async_wait_all();
    __syncthreads();

    const int warp_tok = (warp & 1) * 64;   // 2 warps along tokens
    const int warp_row = (warp >> 1) * 32;  // 4 warps along weight rows
    float acc[4][4][4];
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int nj = 0; nj < 4; ++nj)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mi][nj][e] = 0.0f;

    for (int c = 0; c < n_chunks; ++c) {
        const int cur = c & 1;
        const bool more = c + 1 < n_chunks;
        // Stage cur^1 was last read in iteration c-1, which every warp finished at its barrier.
        if (more) {
            load_x_chunk(xs + (cur ^ 1) * kStageHalves, x, cols, tok0, n_tokens, c + 1);
            cp_async_commit();
        }
        if constexpr (kType == quant::kTypeIQ1_S) {
            const int block = c / (quant::kQK_K / kChunk);
            if (c % (quant::kQK_K / kChunk) == 0 && block + 1 < n_blocks && tid < kTileRows && row0 + tid < rows) {
                // The next IQ1_S block of this thread's row (50 bytes: up to two cache lines) into L1.
                const uint8_t* next =
                    w + uint64_t(row0 + tid) * row_bytes + uint64_t(block + 1) * sizeof(quant::block_iq1_s);
                asm volatile("prefetch.global.L1 [%0];\n" ::"l"(next));
                asm volatile("prefetch.global.L1 [%0];\n" ::"l"(next + sizeof(quant::block_iq1_s) - 1));
            }
        }

        const __half* xs_c = xs + cur * kStageHalves;
        const __half* ws_c = ws + cur * kStageHalves;
#pragma unroll
        for (int ks = 0; ks < kChunk / 16; ++ks) {
            uint32_t a[4][4], b[4][2];
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)  // A 16x16: rows 0-7/8-15 (lanes 0-15), k 0-7/8-15 (lane bit 4)
                ldmatrix_x4(a[mi], xs_c + (warp_tok + mi * 16 + (lane & 15)) * kPitch + ks * 16 + (lane >> 4) * 8);
#pragma unroll
            for (int p = 0; p < 2; ++p) {  // B of two n-tiles: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, ...)
                uint32_t r[4];
                ldmatrix_x4(r, ws_c + (warp_row + p * 16 + (lane & 7) + ((lane >> 4) << 3)) * kPitch + ks * 16 +
                                   ((lane >> 3) & 1) * 8);
                b[2 * p][0] = r[0];
                b[2 * p][1] = r[1];
                b[2 * p + 1][0] = r[2];
                b[2 * p + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
#pragma unroll
                for (int nj = 0; nj < 4; ++nj) mma_16816(acc[mi][nj], a[mi], b[nj]);
        }

        if (more) {
            decode_w_chunk<kType>(ws + (cur ^ 1) * kStageHalves, w, row_bytes, rows, row0, tab, c + 1);
            cp_async_wait_all();
        }
        __syncthreads();  // stage cur^1 complete for everyone; stage cur free for iteration c+1
    }

    // Accumulator e of tile (mi, nj): token g (+8 for e >= 2), rows 2t and 2t+1 (g = lane/4, t = lane%4).
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int64_t token = tok0 + warp_tok + mi * 16 + (lane >> 2) + h * 8;
            if (token >= n_tokens) continue;
#pragma unroll
            for (int nj = 0; nj < 4; ++nj) {
                const int64_t r = row0 + warp_row + nj * 8 + (lane & 3) * 2;
                float* dst = y + token * rows + r;
                if (r < rows) dst[0] = acc[mi][nj][2 * h];
                if (r + 1 < rows) dst[1] = acc[mi][nj][2 * h + 1];
            }
        }
}

template <uint32_t kType>
cudaError_t launch_mma(const DeviceMatrix& w, const __half* x, int n_tokens, float* y, cudaStream_t stream) {
    const int64_t row_tiles = (w.rows + kTileRows - 1) / kTileRows;
    const int64_t tok_tiles = (int64_t(n_tokens) + kTileTok - 1) / kTileTok;
    if (row_tiles > 0x7fffffff || tok_tiles > 65535 || w.cols / kChunk > 0x7fffffff) return cudaErrorInvalidValue;
    constexpr int kSmem = mma_smem_bytes<kType>();
    if (cudaError_t e = cudaFuncSetAttribute(gemm_mma_kernel<kType>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
        e != cudaSuccess)
        return e;
    gemm_mma_kernel<kType><<<dim3(unsigned(row_tiles), unsigned(tok_tiles)), kMmaThreads, kSmem, stream>>>(
        w.data, w.row_bytes, w.rows, w.cols, x, n_tokens, y);
    return cudaGetLastError();
}

}  // namespace

cudaError_t f32_to_f16(const float* x, size_t n, __half* out, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (!x || !out) return cudaErrorInvalidValue;
    const size_t blocks = std::min<size_t>((n + kThreads - 1) / kThreads, size_t(1) << 16);
    f32_to_f16_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(x, n, out);
    return cudaGetLastError();
}

bool gemm_mma_supports(uint32_t type, int64_t cols) {
    return qtype_block_align(type) > 0 && cols >= kChunk && cols % kChunk == 0;
}

cudaError_t gemm_mma(const DeviceMatrix& w, const __half* x, int n_tokens, float* y, cudaStream_t stream) {
    const quant::TypeTraits* t = quant::find_type_traits(w.type);
    if (!gemm_mma_supports(w.type, w.cols) || !t || w.cols % t->block_elements != 0 || w.rows < 1 || n_tokens < 1 ||
        !w.data || !x || !y || (reinterpret_cast<uintptr_t>(x) & 15u) ||
        w.row_bytes < uint64_t(w.cols / t->block_elements) * t->block_bytes ||
        (reinterpret_cast<uintptr_t>(w.data) | uintptr_t(w.row_bytes)) % uintptr_t(qtype_block_align(w.type)) != 0)
        return cudaErrorInvalidValue;
    switch (w.type) {
#define STRATA_MMA_CASE(type) \
    case type: return launch_mma<type>(w, x, n_tokens, y, stream);
        STRATA_CUDA_QTYPES(STRATA_MMA_CASE)
#undef STRATA_MMA_CASE
    default: return cudaErrorInvalidValue;
    }
}

}  // namespace strata::cuda
