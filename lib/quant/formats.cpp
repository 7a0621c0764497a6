#include "quant/formats.hpp"

#include <cstring>
#include <string>

#include "quant/convert.hpp"
#include "quant/iq1s_block.hpp"
#include "quant/iq1s_quantize.hpp"
#include "quant/iq4_nl.hpp"
#include "quant/k_quants.hpp"
#include "quant/q8_0.hpp"
#include "quant/q8_k.hpp"
#include "util/error.hpp"

namespace strata::quant {

namespace {

struct Layout {
    int64_t block_elements;
    size_t block_bytes;
    bool read_only = false;  // decoded only: no quantizer
};

bool layout_of(uint32_t type, Layout& out) {
    switch (type) {
        case kTypeF32: out = {1, 4}; return true;
        case kTypeF16: out = {1, 2}; return true;
        case kTypeBF16: out = {1, 2}; return true;
        case kTypeQ8_0: out = {kQK8_0, sizeof(block_q8_0)}; return true;
        case kTypeQ8_K: out = {kQK_K, sizeof(block_q8_K)}; return true;
        case kTypeIQ1_S: out = {kQK_K, sizeof(block_iq1_s)}; return true;
        case kTypeIQ4_NL: out = {kQK4_NL, sizeof(block_iq4_nl), true}; return true;
        case kTypeQ4_K: out = {kQK_K, sizeof(block_q4_K), true}; return true;
        case kTypeQ5_K: out = {kQK_K, sizeof(block_q5_K), true}; return true;
        case kTypeQ6_K: out = {kQK_K, sizeof(block_q6_K), true}; return true;
        default: return false;
    }
}

Layout checked_layout(uint32_t type, int64_t n) {
    Layout layout{};
    if (!layout_of(type, layout))
        fail(Status::unsupported, "quant: ggml type " + std::to_string(type) + " is not supported");
    if (n < 0 || n % layout.block_elements != 0)
        fail(Status::invalid_argument, "quant: row of " + std::to_string(n) + " elements is not a whole number of " +
                                           std::to_string(layout.block_elements) + "-element blocks");
    return layout;
}

void dequantize_row_iq1s(const block_iq1_s* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b) iq1s_decode_block(x[b], kIq1sGrid, y + b * kQK_K);
}

}  // namespace

bool is_supported(uint32_t ggml_type) {
    Layout layout{};
    return layout_of(ggml_type, layout);
}

bool can_quantize(uint32_t ggml_type) {
    Layout layout{};
    return layout_of(ggml_type, layout) && !layout.read_only;
}

int64_t block_elements(uint32_t ggml_type) { return checked_layout(ggml_type, 0).block_elements; }

size_t row_size(uint32_t ggml_type, int64_t n) {
    const Layout layout = checked_layout(ggml_type, n);
    size_t bytes = 0;
    if (__builtin_mul_overflow(size_t(n / layout.block_elements), layout.block_bytes, &bytes))
        fail(Status::invalid_argument, "quant: row of " + std::to_string(n) + " elements overflows size_t");
    return bytes;
}

void dequantize_row(uint32_t ggml_type, const void* src, float* dst, int64_t n) {
    checked_layout(ggml_type, n);
    if (n > 0 && (!src || !dst)) fail(Status::invalid_argument, "quant: dequantize_row given a null buffer");
    switch (ggml_type) {
        case kTypeF32: if (n > 0) std::memmove(dst, src, size_t(n) * sizeof(float)); break;
        case kTypeF16: f16_to_f32_row(static_cast<const uint16_t*>(src), dst, n); break;
        case kTypeBF16: bf16_to_f32_row(static_cast<const uint16_t*>(src), dst, n); break;
        case kTypeQ8_0: dequantize_row_q8_0(static_cast<const block_q8_0*>(src), dst, n); break;
        case kTypeQ8_K: dequantize_row_q8_k(static_cast<const block_q8_K*>(src), dst, n); break;
        case kTypeIQ1_S: dequantize_row_iq1s(static_cast<const block_iq1_s*>(src), dst, n); break;
        case kTypeIQ4_NL: dequantize_row_iq4_nl(static_cast<const block_iq4_nl*>(src), dst, n); break;
        case kTypeQ4_K: dequantize_row_q4_K(static_cast<const block_q4_K*>(src), dst, n); break;
        case kTypeQ5_K: dequantize_row_q5_K(static_cast<const block_q5_K*>(src), dst, n); break;
        case kTypeQ6_K: dequantize_row_q6_K(static_cast<const block_q6_K*>(src), dst, n); break;
        default: break;  // unreachable: checked_layout threw
    }
}

void quantize_row(uint32_t ggml_type, const float* src, void* dst, int64_t n, const float* imatrix) {
    if (checked_layout(ggml_type, n).read_only)
        fail(Status::unsupported, "quant: strata reads ggml type " + std::to_string(ggml_type) + " but cannot write it");
    if (n > 0 && (!src || !dst)) fail(Status::invalid_argument, "quant: quantize_row given a null buffer");
    switch (ggml_type) {
        case kTypeF32: if (n > 0) std::memmove(dst, src, size_t(n) * sizeof(float)); break;
        case kTypeF16: f32_to_f16_row(src, static_cast<uint16_t*>(dst), n); break;
        case kTypeBF16: f32_to_bf16_row(src, static_cast<uint16_t*>(dst), n); break;
        case kTypeQ8_0: quantize_row_q8_0(src, static_cast<block_q8_0*>(dst), n); break;
        case kTypeQ8_K: quantize_row_q8_k(src, static_cast<block_q8_K*>(dst), n); break;
        case kTypeIQ1_S: if (n > 0) quantize_row_iq1s(src, dst, n, imatrix); break;
        default: break;
    }
}

}  // namespace strata::quant
