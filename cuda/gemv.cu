// gemv / quantize_activations (gemv.cuh): argument checks and dispatch by weight type. The kernels
// live in gemv_iq1s.cu (fused IQ1_S), gemv_dense.cu (Q8_0, F32, F16, BF16) and quantize_act.cu.
// Launch-only: nothing here allocates or synchronizes, so gemv can be timed and graph-captured.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemv.cu).
#include "gemv.cuh"

#include <cstdint>

#include "gemv_launch.cuh"
#include "quant/iq1s_block.hpp"
#include "quant/q8_0.hpp"
#include "quant/q8_k.hpp"
#include "quant/type_ids.hpp"

namespace strata::cuda {
namespace {

// Elements per block of the weight type (1 for float types), 0 when gemv does not take it.
int64_t block_elems(uint32_t type) {
    switch (type) {
    case quant::kTypeF32:
    case quant::kTypeF16:
    case quant::kTypeBF16: return 1;
    case quant::kTypeQ8_0: return quant::kQK8_0;
    case quant::kTypeIQ1_S: return quant::kQK_K;
    default: return 0;
    }
}

uint64_t block_bytes(uint32_t type) {
    switch (type) {
    case quant::kTypeF32: return 4;
    case quant::kTypeF16:
    case quant::kTypeBF16: return 2;
    case quant::kTypeQ8_0: return sizeof(quant::block_q8_0);
    case quant::kTypeIQ1_S: return sizeof(quant::block_iq1_s);
    default: return 0;
    }
}

// Columns beyond this are refused (int32 indices inside the kernels stay far from overflow).
constexpr int64_t kMaxCols = int64_t(1) << 26;

bool cols_ok(uint32_t type, int64_t cols) {
    const int64_t be = block_elems(type);
    return be > 0 && cols > 0 && cols <= kMaxCols && cols % be == 0;
}

bool tokens_ok(int n_tokens) { return n_tokens >= 1 && n_tokens <= kGemvMaxTokens; }

// quantize_activations takes any number of rows whose blocks a grid can count (one warp a block,
// kernels indexing blocks with int64 but launching int-sized grids).
bool rows_ok(uint32_t type, int64_t cols, int n_rows) {
    return n_rows >= 1 && int64_t(n_rows) * (cols / block_elems(type)) <= int64_t(INT32_MAX);
}

}  // namespace

bool gemv_supports(uint32_t weight_type) { return block_elems(weight_type) > 0; }

size_t gemv_act_bytes(uint32_t weight_type, int64_t cols, int n_tokens) {
    if (cols <= 0 || n_tokens <= 0) return 0;
    if (weight_type == quant::kTypeIQ1_S)
        return size_t(n_tokens) * size_t(cols / quant::kQK_K) * sizeof(quant::block_q8_K);
    if (weight_type == quant::kTypeQ8_0)
        return size_t(n_tokens) * size_t(cols / quant::kQK8_0) * sizeof(quant::block_q8_0);
    return 0;
}

cudaError_t quantize_activations(uint32_t weight_type, const float* x, int64_t cols, int n_tokens, void* act,
                                 cudaStream_t stream) {
    if (!cols_ok(weight_type, cols) || !rows_ok(weight_type, cols, n_tokens)) return cudaErrorInvalidValue;
    if (weight_type != quant::kTypeIQ1_S && weight_type != quant::kTypeQ8_0) return cudaSuccess;  // float: no-op
    if (!x || !act) return cudaErrorInvalidValue;
    if (weight_type == quant::kTypeIQ1_S) {
        if (reinterpret_cast<uintptr_t>(act) % 4 != 0) return cudaErrorInvalidValue;  // block_q8_K.d is a float
        return gemv_detail::launch_quantize_q8_k(x, cols, n_tokens, act, stream);
    }
    if (reinterpret_cast<uintptr_t>(act) % 4 != 0) return cudaErrorInvalidValue;  // as gemv requires
    return gemv_detail::launch_quantize_q8_0(x, cols, n_tokens, act, stream);
}

cudaError_t gemv(const DeviceMatrix& w, const float* x, const void* act, int n_tokens, float* y, cudaStream_t stream) {
    if (!cols_ok(w.type, w.cols) || !tokens_ok(n_tokens) || w.rows < 0 || !y) return cudaErrorInvalidValue;
    if (w.row_bytes != uint64_t(w.cols / block_elems(w.type)) * block_bytes(w.type)) return cudaErrorInvalidValue;
    if (w.rows == 0) return cudaSuccess;
    if (!w.data) return cudaErrorInvalidValue;
    if (w.type == quant::kTypeIQ1_S) {
        if (!act || reinterpret_cast<uintptr_t>(act) % 4 != 0 || reinterpret_cast<uintptr_t>(w.data) % 2 != 0)
            return cudaErrorInvalidValue;
        return gemv_detail::launch_iq1s(w, act, n_tokens, y, stream);
    }
    if (w.type == quant::kTypeQ8_0) {
        // act 4-byte aligned: the kernel reads each block with the aligned words around it, which
        // for a block at 2 mod 4 begin 2 bytes before it (inside the matrix's allocation for w).
        if (!act || reinterpret_cast<uintptr_t>(act) % 4 != 0 || reinterpret_cast<uintptr_t>(w.data) % 2 != 0)
            return cudaErrorInvalidValue;
        return gemv_detail::launch_q8_0(w, act, n_tokens, y, stream);
    }
    if (!x) return cudaErrorInvalidValue;
    return gemv_detail::launch_float(w, x, n_tokens, y, stream);
}

}  // namespace strata::cuda
