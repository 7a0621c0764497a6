#include "moe.cuh"

#include "iq1s_warp_dot.cuh"

namespace strata::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;  // one output row per warp

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

// grid: (ceil(rows / kWarpsPerBlock), n_sel, 2): z = 0 gate, 1 up.
__global__ void gate_up_kernel(Iq1sStack gate, Iq1sStack up, const float* x, const int32_t* chosen, float* gate_out,
                               float* up_out) {
    const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (r >= gate.rows) return;
    const int i = int(blockIdx.y);
    const Iq1sStack& m = blockIdx.z == 0 ? gate : up;
    const float v = iq1s_row_dot_warp(expert_row(m, chosen[i], r), m.cols / quant::kQK_K, x);
    if (threadIdx.x % 32 == 0) (blockIdx.z == 0 ? gate_out : up_out)[int64_t(i) * m.rows + r] = v;
}

__global__ void swiglu_kernel(float* gate, const float* up, size_t n) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

// grid: ceil(rows / kWarpsPerBlock); each warp sums its row over the n_sel experts in order.
__global__ void down_kernel(Iq1sStack down, const float* h, const int32_t* chosen, const float* weights, int n_sel,
                            float* out) {
    const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (r >= down.rows) return;
    float acc = 0.0f;
    for (int i = 0; i < n_sel; ++i)
        acc += weights[i] * iq1s_row_dot_warp(expert_row(down, chosen[i], r), down.cols / quant::kQK_K, h + int64_t(i) * down.cols);
    if (threadIdx.x % 32 == 0) out[r] = acc;
}

bool usable(const Iq1sStack& m) {
    return m.data && m.cols > 0 && m.cols % quant::kQK_K == 0 && m.rows > 0 && m.n_expert > 0 &&
           (reinterpret_cast<uintptr_t>(m.data) & 1u) == 0;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

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

cudaError_t moe_gate_up_iq1s(const Iq1sStack& gate, const Iq1sStack& up, const float* x, const int32_t* chosen,
                             int n_sel, float* gate_out, float* up_out, cudaStream_t stream) {
    if (n_sel <= 0) return cudaSuccess;
    if (!usable(gate) || !usable(up) || gate.cols != up.cols || gate.rows != up.rows || gate.n_expert != up.n_expert ||
        !x || !aligned16(x) || !chosen || !gate_out || !up_out || n_sel > 65535)
        return cudaErrorInvalidValue;
    const dim3 grid(unsigned((gate.rows + kWarpsPerBlock - 1) / kWarpsPerBlock), unsigned(n_sel), 2);
    gate_up_kernel<<<grid, kWarpsPerBlock * 32, 0, stream>>>(gate, up, x, chosen, gate_out, up_out);
    return cudaGetLastError();
}

cudaError_t swiglu(float* gate, const float* up, size_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (!gate || !up) return cudaErrorInvalidValue;
    const unsigned threads = 256;
    swiglu_kernel<<<unsigned((n + threads - 1) / threads), threads, 0, stream>>>(gate, up, n);
    return cudaGetLastError();
}

cudaError_t moe_down_iq1s(const Iq1sStack& down, const float* h, const int32_t* chosen, const float* weights, int n_sel,
                          float* out, cudaStream_t stream) {
    if (n_sel <= 0) return cudaSuccess;
    if (!usable(down) || !h || !aligned16(h) || !chosen || !weights || !out) return cudaErrorInvalidValue;
    const unsigned grid = unsigned((down.rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
    down_kernel<<<grid, kWarpsPerBlock * 32, 0, stream>>>(down, h, chosen, weights, n_sel, out);
    return cudaGetLastError();
}

}  // namespace strata::cuda
