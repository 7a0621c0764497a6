// gemv / quantize_activations (gemv.cuh): argument checks and dispatch by weight type, through the
// table of gpu_types.hpp. The kernels live in gemv_iq1s.cu (fused IQ1_S), gemv_fused_k.cu and
// gemv_fused_iq.cu (fused Kimi types), gemv_decode.cu (dequantize-then-dot for the other quantized
// types), gemv_dense.cu (Q8_0, F32, F16, BF16) and quantize_act.cu.
// Launch-only: nothing here allocates or synchronizes, so gemv can be timed and graph-captured.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemv.cpp).
#include "gemv.cuh"

#include <cstdint>

#include "gemv_launch.cuh"
#include "runtime/gpu_types.hpp"
#include "qtype_decode.cuh"
#include "qtype_dot.cuh"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant/type_ids.hpp"
#include "quant/type_traits.hpp"

namespace strata::cuda {
namespace {

// Elements per block of a type gemv takes (1 for float types), 0 when it does not take it.
int64_t block_elems(uint32_t type) {
    const quant::TypeTraits* t = gpu_type(type) ? quant::find_type_traits(type) : nullptr;
    return t ? t->block_elements : 0;
}

uint64_t block_bytes(uint32_t type) {
    const quant::TypeTraits* t = gpu_type(type) ? quant::find_type_traits(type) : nullptr;
    return t ? uint64_t(t->block_bytes) : 0;
}

// The alignment a fused kernel's weight loads need (QDot<type>::kAlign).
int fused_align(uint32_t type) {
#define STRATA_FUSED_ALIGN(t) \
    if (type == t) return QDot<t>::kAlign;
    STRATA_CUDA_FUSED_QTYPES(STRATA_FUSED_ALIGN)
#undef STRATA_FUSED_ALIGN
    return 0;
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
bool rows_ok(int64_t cols, int n_rows) {
    return n_rows >= 1 && int64_t(n_rows) * (cols / quant::kQK8_0) <= int64_t(INT32_MAX);
}

bool aligned(const void* p, uintptr_t a) { return a > 0 && reinterpret_cast<uintptr_t>(p) % a == 0; }

}  // namespace

bool gemv_supports(uint32_t weight_type) { return block_elems(weight_type) > 0; }

int gemv_weight_align(uint32_t weight_type) {
    const GpuTypeInfo* t = gpu_type(weight_type);
    if (!t) return 0;
    switch (t->gemv) {
    case GemvKind::iq1s:
    case GemvKind::q8_0: return 2;
    case GemvKind::fused: return fused_align(weight_type);
    case GemvKind::decode: return qtype_block_align(weight_type);
    case GemvKind::floating: break;
    }
    return weight_type == quant::kTypeF32 ? 4 : 2;
}

uint32_t gemv_act_type(uint32_t weight_type) {
    const GpuTypeInfo* t = gpu_type(weight_type);
    return t ? t->act : quant::kTypeF32;
}

size_t gemv_act_bytes(uint32_t weight_type, int64_t cols, int n_tokens) {
    if (cols <= 0 || n_tokens <= 0) return 0;
    const uint32_t act = gemv_act_type(weight_type);
    if (act == quant::kTypeQ8_K) return size_t(n_tokens) * size_t(cols / quant::kQK_K) * sizeof(quant::block_q8_K);
    if (act == quant::kTypeQ8_0) return size_t(n_tokens) * size_t(cols / quant::kQK8_0) * sizeof(quant::block_q8_0);
    return 0;
}

cudaError_t quantize_activations(uint32_t weight_type, const float* x, int64_t cols, int n_tokens, void* act,
                                 cudaStream_t stream) {
    if (!cols_ok(weight_type, cols) || !rows_ok(cols, n_tokens)) return cudaErrorInvalidValue;
    const uint32_t a = gemv_act_type(weight_type);
    if (a == quant::kTypeF32) return cudaSuccess;  // float activations: no-op
    if (!x || !act) return cudaErrorInvalidValue;
    if (!aligned(act, 4)) return cudaErrorInvalidValue;  // block_q8_K.d is a float; Q8_0: as gemv requires
    if (a == quant::kTypeQ8_K) {
        if (cols % quant::kQK_K != 0) return cudaErrorInvalidValue;
        return gemv_detail::launch_quantize_q8_k(x, cols, n_tokens, act, stream);
    }
    return gemv_detail::launch_quantize_q8_0(x, cols, n_tokens, act, stream);
}

cudaError_t gemv(const DeviceMatrix& w, const float* x, const void* act, int n_tokens, float* y, cudaStream_t stream) {
    if (!cols_ok(w.type, w.cols) || !tokens_ok(n_tokens) || w.rows < 0 || !y) return cudaErrorInvalidValue;
    if (w.row_bytes != uint64_t(w.cols / block_elems(w.type)) * block_bytes(w.type)) return cudaErrorInvalidValue;
    if (w.rows == 0) return cudaSuccess;
    if (!w.data) return cudaErrorInvalidValue;
    if (!aligned(w.data, uintptr_t(gemv_weight_align(w.type)))) return cudaErrorInvalidValue;
    switch (gpu_type(w.type)->gemv) {
    case GemvKind::iq1s:
        if (!act || !aligned(act, 4)) return cudaErrorInvalidValue;
        return gemv_detail::launch_iq1s(w, act, n_tokens, y, stream);
    case GemvKind::q8_0:
        // act 4-byte aligned: the kernel reads each block with the aligned words around it, which
        // for a block at 2 mod 4 begin 2 bytes before it (inside the matrix's allocation for w).
        if (!act || !aligned(act, 4)) return cudaErrorInvalidValue;
        return gemv_detail::launch_q8_0(w, act, n_tokens, y, stream);
    case GemvKind::fused:
        if (!act || !aligned(act, 4)) return cudaErrorInvalidValue;
        if (w.type == quant::kTypeQ4_K || w.type == quant::kTypeQ5_K || w.type == quant::kTypeQ6_K)
            return gemv_detail::launch_fused_k(w, act, n_tokens, y, stream);
        return gemv_detail::launch_fused_iq(w, act, n_tokens, y, stream);
    case GemvKind::decode:
        if (!x) return cudaErrorInvalidValue;
        return gemv_detail::launch_decode(w, x, n_tokens, y, stream);
    case GemvKind::floating: break;
    }
    if (!x) return cudaErrorInvalidValue;
    return gemv_detail::launch_float(w, x, n_tokens, y, stream);
}

}  // namespace strata::cuda
