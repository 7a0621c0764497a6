// The one entry point the rest of the library uses to convert rows between a stored tensor
// format and float32: F32, F16, BF16, Q8_0, Q8_K and IQ1_S both ways; IQ4_NL, Q4_K, Q5_K and
// Q6_K are read only (ggml type ids, see type_ids.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/type_ids.hpp"

namespace strata::quant {

// True for the types dequantize_row / row_size / block_elements accept.
bool is_supported(uint32_t ggml_type);

// True for the supported types quantize_row can also write (all but the read-only ones).
bool can_quantize(uint32_t ggml_type);

// Elements per block of a supported type (1 for F32/F16/BF16).
int64_t block_elements(uint32_t ggml_type);

// Bytes of one row of n elements. Throws Error(unsupported) for other types and
// Error(invalid_argument) when n is negative or not a multiple of the block size.
size_t row_size(uint32_t ggml_type, int64_t n);

// Decodes n elements (one row, or any whole number of blocks) of src into dst.
void dequantize_row(uint32_t ggml_type, const void* src, float* dst, int64_t n);

// Encodes n floats into row_size(ggml_type, n) bytes at dst. imatrix (length n, may be null) is
// used by IQ1_S only; the other formats ignore it. Throws Error(unsupported) for a type that
// can_quantize refuses.
void quantize_row(uint32_t ggml_type, const float* src, void* dst, int64_t n, const float* imatrix);

}  // namespace strata::quant
