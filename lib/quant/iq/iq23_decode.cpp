// Row decoders of the IQ2 and IQ3 formats: whole superblocks through the shared block decoders
// with the host tables (bit-exact to gguf.quants.dequantize and ggml's dequantize_row_*).
#include "iq2_block.hpp"
#include "iq3_block.hpp"

namespace strata::quant {

void decode_row_iq2_xxs(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_iq2_xxs*>(blocks);
    for (int64_t i = 0; i < n / kQK_K; ++i) iq2xxs_decode_block(b[i], kIq2xxsGrid, kIq2Signs, y + i * kQK_K);
}

void decode_row_iq2_xs(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_iq2_xs*>(blocks);
    for (int64_t i = 0; i < n / kQK_K; ++i) iq2xs_decode_block(b[i], kIq2xsGrid, kIq2Signs, y + i * kQK_K);
}

void decode_row_iq2_s(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_iq2_s*>(blocks);
    for (int64_t i = 0; i < n / kQK_K; ++i) iq2s_decode_block(b[i], kIq2sGrid, y + i * kQK_K);
}

void decode_row_iq3_xxs(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_iq3_xxs*>(blocks);
    for (int64_t i = 0; i < n / kQK_K; ++i) iq3xxs_decode_block(b[i], kIq3xxsGrid, kIq2Signs, y + i * kQK_K);
}

void decode_row_iq3_s(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const block_iq3_s*>(blocks);
    for (int64_t i = 0; i < n / kQK_K; ++i) iq3s_decode_block(b[i], kIq3sGrid, y + i * kQK_K);
}

}  // namespace strata::quant
