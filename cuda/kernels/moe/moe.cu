// MoE decode kernels (moe.cuh): routing, and the grouped IQ1_S x Q8_K expert products. The
// products give one warp to an output row: lane g takes group g (eight weights) of every
// superblock, the warp's shuffles add the lanes' integers into the superblock's exact sums, and
// the float steps then follow the chosen CPU kernel superblock after superblock (see row_dot_q8k).
//
// UNTESTED ON A GPU so far (cuda/tests/test_moe_mla.cu checks it bit for bit where a GPU exists).
#include "moe.cuh"

#include "quant/half.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;  // one output row per warp
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kQ8KBytes = int(sizeof(quant::block_q8_K));  // 292
constexpr int64_t kMaxCols = int64_t(1) << 26;              // as gemv: int superblock counts
static_assert(kQ8KBytes % 4 == 0, "Q8_K blocks stay 4-byte aligned in a row");

// The IQ1_S grid in global memory (read through the read-only cache), from the same generated
// data as the host table. Not __constant__: the lanes of a warp look up different entries, which
// the constant cache would serialize.
__device__ const uint64_t kMoeGrid[quant::kIq1sGridSize] = {
#include "quant/iq/iq1s_grid.inc"
};

struct RouteSlots {  // per token, in the workspace
    size_t probs, sel, state, group_score, group_state, bytes;
};

__host__ __device__ RouteSlots route_slots(const exec::MoeRoute& r) {
    RouteSlots s{};
    const size_t n = size_t(r.n_expert), g = size_t(r.n_group > 0 ? r.n_group : 1);
    s.probs = 0;
    s.sel = s.probs + n * sizeof(float);
    s.group_score = s.sel + n * sizeof(float);
    s.state = s.group_score + g * sizeof(float);
    s.group_state = s.state + n;
    s.bytes = (s.group_state + g + 15) / 16 * 16;
    return s;
}

__global__ void route_kernel(const float* logits, const float* bias, exec::MoeRoute r, int n_tokens, uint8_t* ws,
                             int32_t* chosen, float* weights, float* margins) {
    const int t = int(blockIdx.x) * blockDim.x + int(threadIdx.x);
    if (t >= n_tokens) return;
    const RouteSlots s = route_slots(r);
    uint8_t* mine = ws + size_t(t) * s.bytes;
    const float margin = exec::route_token(logits + size_t(t) * r.n_expert, bias, r, reinterpret_cast<float*>(mine + s.probs),
                                           reinterpret_cast<float*>(mine + s.sel), mine + s.state,
                                           reinterpret_cast<float*>(mine + s.group_score), mine + s.group_state,
                                           chosen + size_t(t) * r.n_used, weights + size_t(t) * r.n_used);
    if (margins) margins[t] = margin;
}

__device__ __forceinline__ const quant::block_iq1_s* expert_row(const Iq1sStack& m, int32_t e, int64_t r) {
    const int64_t nb = m.cols / quant::kQK_K;
    return static_cast<const quant::block_iq1_s*>(m.data) + (int64_t(e) * m.rows + r) * nb;
}

__device__ __forceinline__ float quiet_nan() { return __int_as_float(0x7fffffff); }

// Lane g's share of one superblock against its Q8_K block y: the integers of group g (weights
// 8g..8g+7, sub-block s = g / 4) times the sub-block scale, split as the AVX2 kernel's integer
// lanes 2(g%4) (weights 8g..8g+3) and 2(g%4)+1 (8g+4..8g+7), and, in the first lane of each
// sub-block, the sub-block's sumi1 term (quant::iq1s_block_sums). Summed over the 32 lanes:
// lo + hi = sumi, s1 = sumi1, exactly.
struct GroupSums {
    int lo, hi, s1;
};

__device__ __forceinline__ GroupSums group_sums(const quant::block_iq1_s& w, const uint8_t* y, int g) {
    const int s = g / 4;
    const uint64_t e = __ldg(reinterpret_cast<const unsigned long long*>(kMoeGrid) + quant::iq1s_group_index(w, g));
    // Q8_K: d at 0, qs at 4, bsums at 260; a block starts 4-byte aligned (292 = 4 * 73).
    const int* q = reinterpret_cast<const int*>(y + 4 + 8 * g);
    const int ls = quant::iq1s_sub_scale(w, s);
    // The grid entry's bytes are the int8 values -1, 0, 1 of weights 0..7: signed dp4a operands.
    GroupSums r{ls * __dp4a(int(uint32_t(e)), q[0], 0), ls * __dp4a(int(uint32_t(e >> 32)), q[1], 0), 0};
    if (g % 4 == 0) {
        const int16_t* bsums = reinterpret_cast<const int16_t*>(y + 260);
        const int sign = (w.qh[s] & 0x8000u) ? -1 : 1;
        r.s1 = ls * sign * (int(bsums[2 * s]) + int(bsums[2 * s + 1]));
    }
    return r;
}

// d_w * d_x of a superblock, rounded once as both CPU kernels round it.
__device__ __forceinline__ float block_scale(const quant::block_iq1_s& w, const uint8_t* y) {
    return __fmul_rn(quant::f16_to_f32(w.d), *reinterpret_cast<const float*>(y));
}

// One warp's dot of an IQ1_S row (nb superblocks) with Q8_K activations act, bit-identical to
// quant::vec_dot_iq1s_q8k_scalar (kAvx2 false) or vec_dot_iq1s_q8k_avx2 (kAvx2 true). Every lane
// of the warp must call it (full-warp shuffles); lane 0 returns the result.
template <bool kAvx2>
__device__ __forceinline__ float row_dot_q8k(const quant::block_iq1_s* row, const uint8_t* act, int nb, int lane) {
    if constexpr (!kAvx2) {
        // sum = fma(d, sumi + sumi1/8, sum). The warp sums v = 8 * sumi + sumi1 (|v| < 2^23, as
        // in gemv_iq1s.cu), so float(v) * 1/8 is exact and equals the CPU's float(sumi) +
        // 1/8 * float(sumi1), itself exact.
        float sum = 0.0f;
        for (int b = 0; b < nb; ++b) {
            const uint8_t* y = act + size_t(b) * kQ8KBytes;
            const GroupSums p = group_sums(row[b], y, lane);
            int v = 8 * (p.lo + p.hi) + p.s1;
#pragma unroll
            for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(kFullMask, v, o);
            sum = __fmaf_rn(block_scale(row[b], y), __fmul_rn(__int2float_rn(v), quant::kIq1sDelta), sum);
        }
        return sum;
    } else {
        // Lanes of class j = lane % 4 hold the AVX2 kernel's accumulators 2j (lo) and 2j + 1 (hi);
        // acc1, its sumi1 accumulator, is meaningful in class 0 (where the s1 terms are).
        float acc_lo = 0.0f, acc_hi = 0.0f, acc1 = 0.0f;
        for (int b = 0; b < nb; ++b) {
            const uint8_t* y = act + size_t(b) * kQ8KBytes;
            GroupSums p = group_sums(row[b], y, lane);
#pragma unroll
            for (int o = 4; o < 32; o *= 2) {  // over the sub-blocks: lanes of one class
                p.lo += __shfl_xor_sync(kFullMask, p.lo, o);
                p.hi += __shfl_xor_sync(kFullMask, p.hi, o);
                p.s1 += __shfl_xor_sync(kFullMask, p.s1, o);
            }
            const float d = block_scale(row[b], y);
            acc_lo = __fmaf_rn(d, __int2float_rn(p.lo), acc_lo);
            acc_hi = __fmaf_rn(d, __int2float_rn(p.hi), acc_hi);
            acc1 = __fmaf_rn(d, __int2float_rn(p.s1), acc1);
        }
        // ggml's hsum_float_8: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)). Lane j holds a[2j] in acc_lo
        // and a[2j+1] in acc_hi: xor 2 pairs a0 with a4 and a2 with a6, xor 1 then adds the pairs.
        acc_lo = __fadd_rn(acc_lo, __shfl_xor_sync(kFullMask, acc_lo, 2));
        acc_hi = __fadd_rn(acc_hi, __shfl_xor_sync(kFullMask, acc_hi, 2));
        acc_lo = __fadd_rn(acc_lo, __shfl_xor_sync(kFullMask, acc_lo, 1));
        acc_hi = __fadd_rn(acc_hi, __shfl_xor_sync(kFullMask, acc_hi, 1));
        return __fadd_rn(__fadd_rn(acc_lo, acc_hi), __fmul_rn(quant::kIq1sDelta, acc1));
    }
}

// grid: (ceil(rows / kWarpsPerBlock), n_sel, 2): z = 0 gate, 1 up; one warp per output row.
template <bool kAvx2>
__global__ void gate_up_kernel(Iq1sStack gate, Iq1sStack up, const uint8_t* act, const int32_t* chosen,
                               float* gate_out, float* up_out) {
    const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (r >= gate.rows) return;  // whole warps leave; no barrier follows
    const int lane = int(threadIdx.x % 32), i = int(blockIdx.y);
    // gate and up have equal shapes (checked at launch): only the data differs.
    const Iq1sStack m{blockIdx.z == 0 ? gate.data : up.data, gate.cols, gate.rows, gate.n_expert};
    const int32_t e = chosen[i];
    float v = quiet_nan();
    if (e >= 0 && e < m.n_expert)  // uniform over the warp
        v = row_dot_q8k<kAvx2>(expert_row(m, e, r), act, int(m.cols / quant::kQK_K), lane);
    if (lane == 0) (blockIdx.z == 0 ? gate_out : up_out)[int64_t(i) * m.rows + r] = v;
}

__global__ void swiglu_kernel(float* gate, const float* up, size_t n) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

// grid: ceil(rows / kWarpsPerBlock); dynamic shared memory: 2 * n_sel ints. The block first sorts
// the slots by (expert id, slot), then each warp sums its row over them in that order.
template <bool kAvx2>
__global__ void down_kernel(Iq1sStack down, const uint8_t* act, const int32_t* chosen, const float* weights,
                            int n_sel, float* out) {
    extern __shared__ int sorted[];  // ids [n_sel], then order [n_sel]: order[k] = slot of rank k
    int* ids = sorted;
    int* order = sorted + n_sel;
    for (int t = int(threadIdx.x); t < n_sel; t += int(blockDim.x)) ids[t] = chosen[t];
    __syncthreads();
    for (int t = int(threadIdx.x); t < n_sel; t += int(blockDim.x)) {
        const int id = ids[t];
        int rank = 0;  // distinct keys (id, slot): the ranks are a permutation of 0..n_sel-1
        for (int j = 0; j < n_sel; ++j) rank += ids[j] < id || (ids[j] == id && j < t);
        order[rank] = t;
    }
    __syncthreads();  // the last barrier: warps past the last row may leave below

    const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (r >= down.rows) return;
    const int lane = int(threadIdx.x % 32), nb = int(down.cols / quant::kQK_K);
    float acc = 0.0f;  // the CPU's zeroed output
    for (int k = 0; k < n_sel; ++k) {
        const int i = order[k];
        const int32_t e = ids[i];
        const float v = e >= 0 && e < down.n_expert  // uniform over the warp
                            ? row_dot_q8k<kAvx2>(expert_row(down, e, r), act + size_t(i) * size_t(nb) * kQ8KBytes, nb, lane)
                            : quiet_nan();
        acc = __fadd_rn(acc, __fmul_rn(weights[i], v));
    }
    if (lane == 0) out[r] = acc;
}

bool usable(const Iq1sStack& m) {
    return m.data && m.cols > 0 && m.cols % quant::kQK_K == 0 && m.cols <= kMaxCols && m.rows > 0 && m.n_expert > 0 &&
           (reinterpret_cast<uintptr_t>(m.data) & 1u) == 0;
}

bool aligned4(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 3u) == 0; }

// Whether `order` names the AVX2 kernel's float steps: best is what the CPU backend picks here.
bool avx2_order(quant::Iq1sKernel order) {
    if (order == quant::Iq1sKernel::best) order = quant::resolve_iq1s_kernel(order);
    return order == quant::Iq1sKernel::avx2;
}

}  // namespace

size_t moe_route_workspace_bytes(const exec::MoeRoute& r, int n_tokens) {
    return route_slots(r).bytes * size_t(n_tokens > 0 ? n_tokens : 0);
}

cudaError_t moe_route(const float* logits, const float* bias, const exec::MoeRoute& r, int n_tokens, void* workspace,
                      int32_t* chosen, float* weights, float* margins, cudaStream_t stream) {
    if (n_tokens <= 0) return cudaSuccess;
    if (!logits || !workspace || !chosen || !weights || r.n_expert <= 0 || r.n_used <= 0 || r.n_used > r.n_expert)
        return cudaErrorInvalidValue;
    const int threads = 64;
    route_kernel<<<(n_tokens + threads - 1) / threads, threads, 0, stream>>>(logits, bias, r, n_tokens,
                                                                            static_cast<uint8_t*>(workspace), chosen,
                                                                            weights, margins);
    return cudaGetLastError();
}

cudaError_t moe_gate_up_iq1s(const Iq1sStack& gate, const Iq1sStack& up, const void* x_q8k, const int32_t* chosen,
                             int n_sel, quant::Iq1sKernel order, float* gate_out, float* up_out, cudaStream_t stream) {
    if (n_sel < 0 || n_sel > kMoeMaxSelected) return cudaErrorInvalidValue;
    if (n_sel == 0) return cudaSuccess;
    if (!usable(gate) || !usable(up) || gate.cols != up.cols || gate.rows != up.rows || gate.n_expert != up.n_expert ||
        !x_q8k || !aligned4(x_q8k) || !chosen || !gate_out || !up_out)
        return cudaErrorInvalidValue;
    const dim3 grid(unsigned((gate.rows + kWarpsPerBlock - 1) / kWarpsPerBlock), unsigned(n_sel), 2);
    const auto* act = static_cast<const uint8_t*>(x_q8k);
    if (avx2_order(order))
        gate_up_kernel<true><<<grid, kWarpsPerBlock * 32, 0, stream>>>(gate, up, act, chosen, gate_out, up_out);
    else
        gate_up_kernel<false><<<grid, kWarpsPerBlock * 32, 0, stream>>>(gate, up, act, chosen, gate_out, up_out);
    return cudaGetLastError();
}

cudaError_t swiglu(float* gate, const float* up, size_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (!gate || !up) return cudaErrorInvalidValue;
    const unsigned threads = 256;
    swiglu_kernel<<<unsigned((n + threads - 1) / threads), threads, 0, stream>>>(gate, up, n);
    return cudaGetLastError();
}

cudaError_t moe_down_iq1s(const Iq1sStack& down, const void* h_q8k, const int32_t* chosen, const float* weights,
                          int n_sel, quant::Iq1sKernel order, float* out, cudaStream_t stream) {
    if (n_sel < 0 || n_sel > kMoeMaxSelected) return cudaErrorInvalidValue;
    if (n_sel == 0) return cudaSuccess;
    if (!usable(down) || !h_q8k || !aligned4(h_q8k) || !chosen || !weights || !out) return cudaErrorInvalidValue;
    const unsigned grid = unsigned((down.rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
    const size_t smem = 2 * size_t(n_sel) * sizeof(int);  // <= 8 KiB
    const auto* act = static_cast<const uint8_t*>(h_q8k);
    if (avx2_order(order))
        down_kernel<true><<<grid, kWarpsPerBlock * 32, smem, stream>>>(down, act, chosen, weights, n_sel, out);
    else
        down_kernel<false><<<grid, kWarpsPerBlock * 32, smem, stream>>>(down, act, chosen, weights, n_sel, out);
    return cudaGetLastError();
}

}  // namespace strata::cuda
