// Hidden states on the wire: [n_tokens, n_embd] as f32, f16 or bf16 (transport::DType). The
// head picks the type (f16 halves the bytes of f32; f32 keeps results bit-identical to one
// process); each worker answers in the type it was sent, so the whole pipeline uses one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "transport/messages.hpp"

namespace strata::pipeline {

// Encodes rows x cols floats as `dtype` (round to nearest even for f16 and bf16).
transport::Tensor encode_hidden(std::span<const float> values, uint64_t rows, uint64_t cols, transport::DType dtype);

// The hidden states as f32; invalid_argument for a shape other than [n_tokens, n_embd], a byte
// count that does not match, and non-finite values (they would poison the KV cache for good).
std::vector<float> decode_hidden(const transport::Tensor& t, size_t n_tokens, int64_t n_embd);

}  // namespace strata::pipeline
