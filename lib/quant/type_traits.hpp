// One table of per-type facts for every tensor format lib/quant implements: ggml's name, block
// geometry, how a row decodes to float32, which activation format ggml pairs the type with in a
// product (ggml-cpu's vec_dot_type) and the dot product of one weight row with activations in that
// format. formats.hpp, the CPU backend, the GGUF fuzzer and the tools all ask this table, so a type
// is added in one place (type_traits.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "quant/type_ids.hpp"

namespace strata::quant {

// n weights of one row (n a positive multiple of the block size; not checked here) dotted with n
// activations already quantized to the type's dot_type: ggml's arithmetic, integer sums per block
// scaled by the block scales.
using VecDotFn = float (*)(int64_t n, const void* w, const void* x);
// Decodes n elements (whole blocks) to float32, bit for bit as ggml's dequantize_row_*.
using DecodeFn = void (*)(const void* blocks, float* y, int64_t n);
// Encodes n floats (whole blocks); imatrix (length n, may be null) for the types that use one.
using QuantizeFn = void (*)(const float* x, void* blocks, int64_t n, const float* imatrix);

struct TypeTraits {
    uint32_t id = 0;
    const char* name = "";        // ggml's type_name: "q4_K", "iq1_s", "f32"
    int64_t block_elements = 1;   // weights per block (1 for F32/F16/BF16)
    size_t block_bytes = 0;
    uint32_t dot_type = kTypeF32;  // activations' format in products (kTypeF32: float activations)
    DecodeFn decode = nullptr;
    QuantizeFn quantize = nullptr;  // null: read only (strata decodes the type but does not write it)
    VecDotFn dot_scalar = nullptr;  // the exact reference (ggml's generic C); null for float types
    VecDotFn dot_avx2 = nullptr;    // AVX2 kernel with the same integers per block; null: none
};

// The traits of a ggml type id, or nullptr when lib/quant does not implement it.
const TypeTraits* find_type_traits(uint32_t ggml_type);

// True when a weight matrix of this type can be multiplied: a float type, or one with an integer
// dot against its activation type (q8_1 and q8_K are activation formats, not weights).
inline bool is_weight_type(const TypeTraits& t) { return t.dot_type == kTypeF32 || t.dot_scalar != nullptr; }

// Every implemented type's name, comma-separated in id order (for error messages).
std::string supported_type_names();

// The dot kernel to run on this CPU: dot_avx2 when the type has one, the CPU has AVX2+FMA+F16C
// and `scalar` is false (or $STRATA_CPU=scalar is not set), else dot_scalar.
VecDotFn best_vec_dot(const TypeTraits& traits, bool scalar = false);

}  // namespace strata::quant
