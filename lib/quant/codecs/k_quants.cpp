// Row decoders of the K-quants: loops over the one-block decoders of k_quants.hpp.
#include "k_quants.hpp"

namespace strata::quant {

void decode_row_q2_K(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_q2_K*>(blocks);
    for (int64_t i = 0; i < n / kQK_K; ++i) q2_K_decode_block(b[i], y + i * kQK_K);
}

void decode_row_q3_K(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_q3_K*>(blocks);
    for (int64_t i = 0; i < n / kQK_K; ++i) q3_K_decode_block(b[i], y + i * kQK_K);
}

void dequantize_row_q4_K(const block_q4_K* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n / kQK_K; ++i) q4_K_decode_block(x[i], y + i * kQK_K);
}

void dequantize_row_q5_K(const block_q5_K* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n / kQK_K; ++i) q5_K_decode_block(x[i], y + i * kQK_K);
}

void dequantize_row_q6_K(const block_q6_K* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n / kQK_K; ++i) q6_K_decode_block(x[i], y + i * kQK_K);
}

}  // namespace strata::quant
