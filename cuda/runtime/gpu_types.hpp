// Which weight types the CUDA backend takes and which kernels run them: one table, read by gemv.cu
// (dispatch, activation formats), gemm.cu and matmul.cpp (prefill), ops (embedding rows) and the
// upload's type check (gpu_weights.cpp). A type is taken when the GPU has a decoder for it
// (qtype_decode.cuh) or a float kernel: every type the CPU backend multiplies
// (exec::CpuBackend::supports), which cuda/tests/test_qtype_host.cu checks id by id. Block sizes and
// names come from lib/quant's own table (quant::find_type_traits). Plain C++17: included by .cu and
// .cpp files alike.
#pragma once

#include <cstdint>
#include <string>

#include "quant/type_ids.hpp"

namespace strata::cuda {

// The decode-product (1..8 tokens) kernel of a weight type.
enum class GemvKind : uint8_t {
    floating,  // F32 / F16 / BF16 against the float activations (gemv_dense.cu)
    iq1s,      // the fused IQ1_S x Q8_K kernel (gemv_iq1s.cu)
    q8_0,      // Q8_0 x Q8_0 (gemv_dense.cu)
    fused,     // the fused kernels of the Kimi types (gemv_fused.cuh): integer dots on quantized activations
    decode,    // dequantize-then-dot in float32 (gemv_decode.cu)
};

struct GpuTypeInfo {
    uint32_t type;
    GemvKind gemv;
    uint32_t act;  // the activations gemv reads: quant::kTypeQ8_K, kTypeQ8_0, or kTypeF32 (the float x)
};

inline constexpr GpuTypeInfo kGpuTypes[] = {
    {quant::kTypeF32, GemvKind::floating, quant::kTypeF32},
    {quant::kTypeF16, GemvKind::floating, quant::kTypeF32},
    {quant::kTypeBF16, GemvKind::floating, quant::kTypeF32},
    {quant::kTypeQ4_0, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeQ4_1, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeQ5_0, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeQ5_1, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeQ8_0, GemvKind::q8_0, quant::kTypeQ8_0},
    {quant::kTypeQ2_K, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeQ3_K, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeQ4_K, GemvKind::fused, quant::kTypeQ8_K},
    {quant::kTypeQ5_K, GemvKind::fused, quant::kTypeQ8_K},
    {quant::kTypeQ6_K, GemvKind::fused, quant::kTypeQ8_K},
    {quant::kTypeIQ2_XXS, GemvKind::fused, quant::kTypeQ8_K},
    {quant::kTypeIQ2_XS, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeIQ3_XXS, GemvKind::fused, quant::kTypeQ8_K},
    {quant::kTypeIQ1_S, GemvKind::iq1s, quant::kTypeQ8_K},
    {quant::kTypeIQ4_NL, GemvKind::fused, quant::kTypeQ8_0},
    {quant::kTypeIQ3_S, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeIQ2_S, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeIQ4_XS, GemvKind::fused, quant::kTypeQ8_K},
    {quant::kTypeIQ1_M, GemvKind::fused, quant::kTypeQ8_K},
    {quant::kTypeTQ1_0, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeTQ2_0, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeMXFP4, GemvKind::decode, quant::kTypeF32},
    {quant::kTypeQ1_0, GemvKind::decode, quant::kTypeF32},
};

// The entry of a weight type, or nullptr when the CUDA backend does not take it.
constexpr const GpuTypeInfo* gpu_type(uint32_t type) {
    for (const GpuTypeInfo& t : kGpuTypes)
        if (t.type == type) return &t;
    return nullptr;
}

// The names of the types the CUDA backend takes, comma-separated in id order (for refusals;
// gpu_types.cpp).
std::string gpu_weight_type_names();

// The types of GemvKind::decode, as X(type id) (the instantiations of gemv_decode.cu).
#define STRATA_CUDA_DECODE_GEMV_QTYPES(X)                                                                     \
    X(quant::kTypeQ4_0) X(quant::kTypeQ4_1) X(quant::kTypeQ5_0) X(quant::kTypeQ5_1) X(quant::kTypeQ2_K)     \
    X(quant::kTypeQ3_K) X(quant::kTypeIQ2_XS) X(quant::kTypeIQ3_S) X(quant::kTypeIQ2_S) X(quant::kTypeTQ1_0) \
    X(quant::kTypeTQ2_0) X(quant::kTypeMXFP4) X(quant::kTypeQ1_0)

}  // namespace strata::cuda
