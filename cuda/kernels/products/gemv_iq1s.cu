// The fused IQ1_S x Q8_K decode GEMV (gemv.cuh): y[t][r] = sum over superblocks b of
//   (d_w[r][b] * d_x[t][b]) * (sumi + sumi1 / 8),
// with sumi, sumi1 the exact integers of quant::iq1s_block_sums, so that the GPU and the CPU
// (quant::vec_dot_iq1s_q8k_scalar) differ only in the order the per-superblock float terms are summed.
//
// Work split. A tile is 8 consecutive rows; their bytes are contiguous (rows are packed), so a
// team of threads stages a tile with aligned 16-byte cp.async copies (the span rounded out to 16
// bytes: the allocation is 256-byte aligned and padded by kDevicePadBytes) into shared memory,
// while it decodes the previous tile (double buffer; blocks are persistent, looping over tiles).
// A block is one team, or 2..8 teams sharing one table (the wide variant below). Thread p of a
// team owns sub-block p (32 weights) of the row, at most a few per thread: it keeps that
// sub-block's Q8_K activations of every token in registers (loaded once for all the team's tiles
// when one position per thread covers the row, up to 8192 columns) and runs down the tile's 8 rows,
// decoding from shared memory (grid table in shared memory too, packed to 4 bits a value so one
// 32-bit load serves a group of 8 weights) and dotting with __dp4a. The 8 threads of one
// superblock hold the integer 8*sumi + sumi1 (exact, |.| < 2^23) in parts, summed by a
// reduce-scatter over those 8 lanes (7 shuffles per 8 row-token pairs), after which each lane
// owns one (row, token) pair of the superblock and adds its float term. Per-thread partial sums
// are added in shared memory at the end of the tile, in a fixed order (deterministic).
//
// Throughput model (to be checked with strata-bench kernels on an H200). Per warp and 32
// sub-block-rows (200 weight bytes) the shared-memory pipe does 4 grid lookups, 3 16-bit weight
// loads (~1.5 wavefronts each) and ~1 shuffle. Random lookups into one table cost ~3.5 wavefronts
// each (bank conflicts): ~20 cycles, ~10 B/clk/SM, roughly 55-65% of HBM bandwidth. So for 1-2
// tokens, where the lookups bound the kernel, the wide variant keeps 16 copies of the table
// interleaved word by word (lane L reads copy L % 16: at most 2 lanes to a bank) in 128 KiB, one
// block per SM with several teams: ~14 cycles, ~80-90%, estimated. From 3 tokens the dp4a work
// (8 per sub-block-row and token) bounds the kernel and the single table is used.
// Registers (ptxas -v, sm_90): 72 (1 token) to 128 (5 and 8 tokens), wide variant 76 / 79, no spills.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemv.cu).
#include <algorithm>
#include <cstdint>

#include <cuda_fp16.h>

#include "gemv.cuh"
#include "gemv_launch.cuh"
#include "qtype_dot.cuh"
#include "quant/iq/iq1s_block.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::cuda::gemv_detail {
namespace {

constexpr int kTileRows = 8;      // rows per tile; also the lanes of one superblock (reduce-scatter)
constexpr int kMaxThreads = 256;  // threads per block at most (one sub-block position each)
constexpr int kSubBlocks = quant::kQK_K / quant::kIq1sSubBlock;  // 8 per superblock
constexpr int kIq1sBytes = int(sizeof(quant::block_iq1_s));       // 50
constexpr int kQ8KBytes = int(sizeof(quant::block_q8_K));         // 292
constexpr int kGridBytes = quant::kIq1sGridSize * 4;              // 8 KiB, packed (iq1_pack_entry)
// The wide variant (1 or 2 tokens): kWideCopies copies of the table, word idx * 16 + c holding
// copy c of entry idx, lane L reading copy L % 16, so that a warp's 32 lookups meet at most 2 to a
// bank (lanes L and L + 16) instead of ~3.5 for random indices into one copy. 128 KiB, so one block
// per SM, holding 2..8 teams of threads that each decode their own tiles.
constexpr int kWideCopies = 16;
constexpr int kWideGridBytes = kGridBytes * kWideCopies;          // 128 KiB
constexpr int kWideMaxThreads = 768;                              // <= 85 registers a thread
constexpr int kWideMinThreads = 384;
constexpr int kWideMaxTeams = 8;                                  // named barriers 1..8
static_assert(kTileRows == kSubBlocks, "the reduce-scatter gives each of a superblock's 8 lanes one pair of 8");
static_assert(kQ8KBytes % 4 == 0, "Q8_K blocks stay 4-byte aligned in a row");


struct Iq1sArgs {
    const uint8_t* w;
    int64_t rows;
    int64_t row_bytes;
    int64_t n_tiles;
    int nb;              // superblocks per row
    int n_tokens;        // <= the kernel's T (6 and 7 tokens run the 8-token kernel: theirs spill)
    int n_teams;         // thread teams per block, each decoding its own tiles (wide table: 2..8)
    uint32_t grid_bytes; // shared memory of the grid table (one copy, or kWideCopies)
    uint32_t red_bytes;  // shared memory for a team's per-tile partial sums
    uint32_t buf_bytes;  // one staging buffer (a team has two)
    const uint8_t* act;  // [n_tokens][nb] block_q8_K
    float* y;            // [n_tokens][rows]
};

// A grid entry (eight values in {-1, 0, 1}) as value + 1 in 4 bits (iq1_pack_entry,
// qtype_dot.cuh): value j < 4 in the low nibble of byte j, value 4 + j in its high nibble, so
// e & 0x0f0f0f0f and (e >> 4) & 0x0f0f0f0f are the two dp4a operands (values + 1, in 0..2). The +1
// is taken back with the activations' sum: sum (g+1) q = sum g q + sum q, and sum q over a
// sub-block is bsums[2s] + bsums[2s+1] (Q8_K's bsums are the sums of its qs, as
// quantize_activations and quantize_row_q8_k write them).
using PackedGrid = Iq1PackedGrid;

// The packed table in global memory, built at compile time from the one host table; each
// (persistent) block copies it into shared memory once.
__device__ const PackedGrid kPackedGrid = iq1_packed_grid();

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Issue the copies of tile `tile`'s bytes, rounded out to 16-byte boundaries, into buf.
__device__ __forceinline__ void stage_tile(const Iq1sArgs& a, int64_t tile, uint8_t* buf, int tid, int n_threads) {
    const int64_t r0 = tile * kTileRows;
    const int64_t r1 = min(a.rows, r0 + kTileRows);
    const uintptr_t begin = reinterpret_cast<uintptr_t>(a.w + uint64_t(r0) * uint64_t(a.row_bytes));
    const uintptr_t end = reinterpret_cast<uintptr_t>(a.w + uint64_t(r1) * uint64_t(a.row_bytes));
    const uintptr_t lo = begin & ~uintptr_t(15), hi = (end + 15) & ~uintptr_t(15);
    const int n16 = int((hi - lo) / 16);  // <= buf_bytes / 16 (see launch_iq1s)
    for (int i = tid; i < n16; i += n_threads)
        cp_async16(buf + 16 * i, reinterpret_cast<const void*>(lo + uintptr_t(16) * uintptr_t(i)));
}

// 8 lanes (q = lane % 8) each hold v[0..7]; afterwards lane q returns the sum over the 8 lanes of
// v[q]. Shuffle offsets 4, 2, 1 stay inside the aligned group of 8, named by mask.
__device__ __forceinline__ int reduce_scatter8(const int (&v)[8], int q, unsigned mask) {
    int w[4];
    const bool h4 = q & 4, h2 = q & 2, h1 = q & 1;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int send = h4 ? v[i] : v[i + 4];
        const int keep = h4 ? v[i + 4] : v[i];
        w[i] = keep + __shfl_xor_sync(mask, send, 4);
    }
    int u[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int send = h2 ? w[i] : w[i + 2];
        const int keep = h2 ? w[i + 2] : w[i];
        u[i] = keep + __shfl_xor_sync(mask, send, 2);
    }
    const int send = h1 ? u[0] : u[1];
    const int keep = h1 ? u[1] : u[0];
    return keep + __shfl_xor_sync(mask, send, 1);
}

// Barrier of one team: the block's barrier when the block is one team, else named barrier
// 1 + team (team_threads a multiple of 32).
template <bool kWide>
__device__ __forceinline__ void team_sync(int team, int team_threads) {
    if constexpr (kWide) asm volatile("bar.sync %0, %1;\n" ::"r"(1 + team), "r"(team_threads) : "memory");
    else __syncthreads();
}

// Grid entry idx (packed) as this lane reads it: the single table, or the lane's copy of the wide one.
template <bool kWide>
__device__ __forceinline__ uint32_t grid_entry(const uint32_t* grid, unsigned idx, int lane) {
    if constexpr (kWide) return grid[idx * kWideCopies + unsigned(lane & (kWideCopies - 1))];
    return grid[idx];
}

// Sub-block position p's 32 activations of each token (xq) and their sum (bsums[2s] + bsums[2s+1]).
template <int T>
__device__ __forceinline__ void load_activations(const Iq1sArgs& a, int p, int (&xq)[T][8], int (&bsum)[T]) {
    const int b = p / kSubBlocks, s = p % kSubBlocks;
#pragma unroll
    for (int t = 0; t < T; ++t) {
        if (t >= a.n_tokens) {  // a token beyond the launch's: zeros, its pairs are not written
#pragma unroll
            for (int k = 0; k < 8; ++k) xq[t][k] = 0;
            bsum[t] = 0;
            continue;
        }
        const uint8_t* blk = a.act + (int64_t(t) * a.nb + b) * kQ8KBytes;
        const int* qs = reinterpret_cast<const int*>(blk + 4 + 32 * s);
#pragma unroll
        for (int k = 0; k < 8; ++k) xq[t][k] = __ldg(qs + k);
        const unsigned bs = __ldg(reinterpret_cast<const unsigned*>(blk + 260 + 4 * s));
        bsum[t] = int(int16_t(uint16_t(bs & 0xffffu))) + int(int16_t(uint16_t(bs >> 16)));
    }
}

// Decode tile `tile` (staged in buf) for T tokens and write its y values. preloaded: the block has
// one position per thread (one round), whose activations xq/bsum were loaded once for all tiles.
// tid, team, team_threads: this thread's place in its team, which alone decodes the tile.
template <int T, bool kWide>
__device__ __forceinline__ void compute_tile(const Iq1sArgs& a, int64_t tile, const uint8_t* buf, const uint32_t* grid,
                                             float* red, bool preloaded, int (&xq)[T][8], int (&bsum)[T], int tid,
                                             int team, int team_threads) {
    const int64_t r0 = tile * kTileRows;
    const int n_valid = int(min(int64_t(kTileRows), a.rows - r0));
    const int rb = int(a.row_bytes);
    // Offset of row r0 inside the staged span (the span starts at the 16-byte boundary below it).
    const int base = int(reinterpret_cast<uintptr_t>(a.w + uint64_t(r0) * uint64_t(a.row_bytes)) & 15u);
    const int q = tid & 7, lane = tid & 31;
    const unsigned group_mask = 0xffu << (lane & 24);
    const int n_pos = kSubBlocks * a.nb;

    float acc[T];
#pragma unroll
    for (int c = 0; c < T; ++c) acc[c] = 0.0f;

    // p < n_pos is uniform over each aligned group of 8 lanes (n_pos, team_threads multiples of 8).
    for (int p = tid; p < n_pos; p += team_threads) {
        const int b = p / kSubBlocks, s = p % kSubBlocks;
        if (!preloaded) load_activations<T>(a, p, xq, bsum);
        int v[8];  // pending (row, token) integers; pair i = r * T + t goes to v[i % 8]
#pragma unroll
        for (int r = 0; r < kTileRows; ++r) {
            int sub[T];
            // v = 8 * ls * sum(g q) + sign * ls * bsum = ls8 * sum((g+1) q) + lsb * bsum
            int ls8 = 0, lsb = 0;
            if (r < n_valid) {     // uniform over the team
                const uint8_t* blk = buf + base + r * rb + b * kIq1sBytes;
                const unsigned qs01 = *reinterpret_cast<const uint16_t*>(blk + 2 + 4 * s);
                const unsigned qs23 = *reinterpret_cast<const uint16_t*>(blk + 4 + 4 * s);
                const unsigned qh = *reinterpret_cast<const uint16_t*>(blk + 34 + 2 * s);
                // index of group k = qs[4s+k] | ((qh >> 3k) & 7) << 8 (quant::iq1s_group_index)
                const uint32_t e0 = grid_entry<kWide>(grid, (qs01 & 0xffu) | ((qh << 8) & 0x700u), lane);
                const uint32_t e1 = grid_entry<kWide>(grid, (qs01 >> 8) | ((qh << 5) & 0x700u), lane);
                const uint32_t e2 = grid_entry<kWide>(grid, (qs23 & 0xffu) | ((qh << 2) & 0x700u), lane);
                const uint32_t e3 = grid_entry<kWide>(grid, (qs23 >> 8) | ((qh >> 1) & 0x700u), lane);
                const int g[8] = {int(e0 & 0x0f0f0f0fu), int((e0 >> 4) & 0x0f0f0f0fu), int(e1 & 0x0f0f0f0fu),
                                  int((e1 >> 4) & 0x0f0f0f0fu), int(e2 & 0x0f0f0f0fu), int((e2 >> 4) & 0x0f0f0f0fu),
                                  int(e3 & 0x0f0f0f0fu), int((e3 >> 4) & 0x0f0f0f0fu)};
                const int ls = 2 * int((qh >> 12) & 7u) + 1;
                ls8 = 8 * ls;
                lsb = ((qh & 0x8000u) ? -ls : ls) - ls8;
#pragma unroll
                for (int t = 0; t < T; ++t) {
                    int d = 0;
#pragma unroll
                    for (int k = 0; k < 8; ++k) d = __dp4a(g[k], xq[t][k], d);
                    sub[t] = d;
                }
            } else {
#pragma unroll
                for (int t = 0; t < T; ++t) sub[t] = 0;
            }
#pragma unroll
            for (int t = 0; t < T; ++t) {
                const int i = r * T + t;
                v[i % 8] = ls8 * sub[t] + lsb * bsum[t];
                if (i % 8 == 7) {  // 8 pairs pending: lane q takes pair 8c + q
                    const int c = i / 8;
                    const int total = reduce_scatter8(v, q, group_mask);
                    const int pair = 8 * c + q, pr = pair / T, pt = pair % T;
                    if (pr < n_valid && pt < a.n_tokens) {
                        const float dw = __half2float(  // exact, as quant::f16_to_f32
                            __ushort_as_half(*reinterpret_cast<const unsigned short*>(buf + base + pr * rb + b * kIq1sBytes)));
                        const float dx = __ldg(reinterpret_cast<const float*>(a.act + (int64_t(pt) * a.nb + b) * kQ8KBytes));
                        // total / 8 = sumi + sumi1 / 8 exactly (|total| < 2^23), as the CPU forms it.
                        acc[c] = fmaf(__fmul_rn(dw, dx), __fmul_rn(float(total), 0.125f), acc[c]);
                    }
                }
            }
        }
    }

    // Pair 8c + q of slot tid / 8; then thread i adds pair i over the slots in order.
    const int n_slots = team_threads / 8, slot = tid / 8;
#pragma unroll
    for (int c = 0; c < T; ++c) red[slot * 8 * T + 8 * c + q] = acc[c];
    team_sync<kWide>(team, team_threads);
    for (int i = tid; i < 8 * T; i += team_threads) {
        const int pr = i / T, pt = i % T;
        if (pr >= n_valid || pt >= a.n_tokens) continue;
        float sum = 0.0f;
        for (int sl = 0; sl < n_slots; ++sl) sum += red[sl * 8 * T + i];
        a.y[int64_t(pt) * a.rows + r0 + pr] = sum;
    }
}

// Block = n_teams teams of blockDim.x / n_teams threads; team k of block b decodes tiles
// b * n_teams + k + i * gridDim.x * n_teams, double-buffering its own staging.
template <int T, bool kWide>
__global__ void __launch_bounds__(kWide ? kWideMaxThreads : kMaxThreads, kWide ? 1 : 2) iq1s_gemv_kernel(Iq1sArgs a) {
    extern __shared__ __align__(16) uint8_t smem[];
    uint32_t* grid = reinterpret_cast<uint32_t*>(smem);
    const int team_threads = int(blockDim.x) / a.n_teams;
    const int team = int(threadIdx.x) / team_threads, tid = int(threadIdx.x) % team_threads;
    uint8_t* const mine = smem + a.grid_bytes + size_t(team) * (a.red_bytes + 2 * size_t(a.buf_bytes));
    float* red = reinterpret_cast<float*>(mine);
    uint8_t* const buf0 = mine + a.red_bytes;  // two staging buffers, buf_bytes each

    const int64_t stride = int64_t(gridDim.x) * a.n_teams;
    int64_t tile = int64_t(blockIdx.x) * a.n_teams + team;
    if (tile < a.n_tiles) stage_tile(a, tile, buf0, tid, team_threads);
    cp_async_commit();
    const uint4* packed = reinterpret_cast<const uint4*>(kPackedGrid.entry);
    if constexpr (kWide) {  // 16-byte unit i holds copies 4(i%4)..4(i%4)+3 of entry i / 4
        for (int i = int(threadIdx.x); i < kWideGridBytes / 16; i += int(blockDim.x)) {
            const uint32_t e = kPackedGrid.entry[i / (kWideCopies / 4)];
            reinterpret_cast<uint4*>(grid)[i] = make_uint4(e, e, e, e);
        }
    } else {
        for (int i = int(threadIdx.x); i < kGridBytes / 16; i += int(blockDim.x))
            reinterpret_cast<uint4*>(grid)[i] = packed[i];
    }
    __syncthreads();  // the table, for every team (afterwards each team synchronizes alone)

    // One round (a position per thread, the usual case up to 8192 columns): this thread's
    // activations stay in registers for every tile it decodes.
    const int n_pos = kSubBlocks * a.nb;
    const bool preloaded = n_pos <= team_threads;
    int xq[T][8], bsum[T];
    if (preloaded && tid < n_pos) load_activations<T>(a, tid, xq, bsum);

    for (int it = 0; tile < a.n_tiles; ++it, tile += stride) {
        const int64_t next = tile + stride;
        if (next < a.n_tiles) stage_tile(a, next, buf0 + ((it + 1) & 1) * a.buf_bytes, tid, team_threads);
        cp_async_commit();  // possibly empty: keeps "all but the newest group" meaning this tile
        cp_async_wait<1>();
        team_sync<kWide>(team, team_threads);  // this tile's bytes visible to the whole team
        compute_tile<T, kWide>(a, tile, buf0 + (it & 1) * a.buf_bytes, grid, red, preloaded, xq, bsum, tid, team,
                               team_threads);
        team_sync<kWide>(team, team_threads);  // buffer and red free before the next iteration overwrites them
    }
    cp_async_wait<0>();  // nothing is left in flight when the block exits
}

// Shared memory of a launch with this many teams.
size_t smem_bytes(const Iq1sArgs& a, int grid_bytes, int teams) {
    return size_t(grid_bytes) + size_t(teams) * (a.red_bytes + 2 * size_t(a.buf_bytes));
}

// Launches the kernel if a block of `teams` teams fits on an SM; *launched says whether it did.
template <int T, bool kWide>
cudaError_t try_launch(Iq1sArgs a, int team_threads, int teams, int sms, int smem_optin, cudaStream_t stream,
                       bool* launched) {
    *launched = false;
    a.n_teams = teams;
    a.grid_bytes = uint32_t(kWide ? kWideGridBytes : kGridBytes);
    const size_t smem = smem_bytes(a, int(a.grid_bytes), teams);
    if (smem > size_t(smem_optin)) return cudaSuccess;
    auto kernel = iq1s_gemv_kernel<T, kWide>;
    if (smem > 48 * 1024)
        if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
            e != cudaSuccess)
            return e;
    const int threads = teams * team_threads;
    int per_sm = 0;
    if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
        e != cudaSuccess)
        return e;
    if (per_sm < 1) return cudaSuccess;  // registers or shared memory: does not fit
    const int64_t blocks = std::min<int64_t>((a.n_tiles + teams - 1) / teams, int64_t(per_sm) * sms);
    kernel<<<unsigned(blocks), threads, smem, stream>>>(a);
    *launched = true;
    return cudaGetLastError();
}

template <int T>
cudaError_t launch_t(Iq1sArgs args, int team_threads, cudaStream_t stream) {
    args.red_bytes = uint32_t((team_threads / 8) * 8 * T * int(sizeof(float)) + 15) / 16 * 16;
    int device = 0, sms = 0, smem_optin = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return e;
    if (cudaError_t e = cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
        e != cudaSuccess)
        return e;
    bool launched = false;
    if constexpr (T <= 2) {  // lookup-bound: the wide table, with as many teams as fit, if that
                             // makes at least 12 warps (the SM holds this one block only)
        for (int teams = std::min(kWideMaxTeams, kWideMaxThreads / team_threads);
             teams >= 2 && teams * team_threads >= kWideMinThreads && !launched; --teams)
            if (cudaError_t e = try_launch<T, true>(args, team_threads, teams, sms, smem_optin, stream, &launched);
                e != cudaSuccess)
                return e;
    }
    if (!launched)
        if (cudaError_t e = try_launch<T, false>(args, team_threads, 1, sms, smem_optin, stream, &launched);
            e != cudaSuccess)
            return e;
    return launched ? cudaSuccess : cudaErrorInvalidValue;  // the tile does not fit in shared memory
}

}  // namespace

cudaError_t launch_iq1s(const DeviceMatrix& w, const void* act, int n_tokens, float* y, cudaStream_t stream) {
    Iq1sArgs a{};
    a.w = w.data;
    a.rows = w.rows;
    a.row_bytes = int64_t(w.row_bytes);
    a.n_tiles = (w.rows + kTileRows - 1) / kTileRows;
    a.nb = int(w.cols / quant::kQK_K);
    a.act = static_cast<const uint8_t*>(act);
    a.y = y;
    a.n_tokens = n_tokens;
    // One sub-block position per thread and round: the fewest rounds of at most kMaxThreads,
    // with the threads spread evenly over them (whole warps).
    const int n_pos = kSubBlocks * a.nb;
    const int rounds = (n_pos + kMaxThreads - 1) / kMaxThreads;
    const int threads = ((n_pos + rounds - 1) / rounds + 31) / 32 * 32;
    // Staging buffer: 8 rows plus up to 15 bytes of rounding at each end, in whole 16-byte units.
    // At 65,536 columns two buffers (2 x 100 KiB), the grid and the sums take 216 KiB of the
    // 227 KiB a block may have on sm_90; wider rows are refused.
    if (a.nb > 256) return cudaErrorInvalidValue;
    const int64_t buf = (kTileRows * a.row_bytes + 15) / 16 * 16 + 32;
    a.buf_bytes = uint32_t(buf);
    switch (n_tokens) {
    case 1: return launch_t<1>(a, threads, stream);
    case 2: return launch_t<2>(a, threads, stream);
    case 3: return launch_t<3>(a, threads, stream);
    case 4: return launch_t<4>(a, threads, stream);
    case 5: return launch_t<5>(a, threads, stream);
    case 6: return launch_t<8>(a, threads, stream);
    case 7: return launch_t<8>(a, threads, stream);
    case 8: return launch_t<8>(a, threads, stream);
    default: return cudaErrorInvalidValue;
    }
}

}  // namespace strata::cuda::gemv_detail
