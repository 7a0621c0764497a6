// Rows of F16 / BF16 <-> F32. Element-wise and bit-exact (see half.hpp): round to nearest even,
// NaN stays NaN, overflow goes to infinity, subnormals are kept.
#pragma once

#include <cstdint>

namespace strata::quant {

void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n);
void bf16_to_f32_row(const uint16_t* src, float* dst, int64_t n);
void f32_to_bf16_row(const float* src, uint16_t* dst, int64_t n);

}  // namespace strata::quant
