#include "quant/formats.hpp"

#include <string>

#include "quant/type_traits.hpp"
#include "util/error.hpp"

namespace strata::quant {

namespace {

const TypeTraits& checked_traits(uint32_t type, int64_t n) {
    const TypeTraits* t = find_type_traits(type);
    if (!t)
        fail(Status::unsupported, "quant: ggml type " + std::to_string(type) + " is not supported (supported: " +
                                      supported_type_names() + ")");
    if (n < 0 || n % t->block_elements != 0)
        fail(Status::invalid_argument, "quant: row of " + std::to_string(n) + " elements is not a whole number of " +
                                           std::to_string(t->block_elements) + "-element " + t->name + " blocks");
    return *t;
}

}  // namespace

bool is_supported(uint32_t ggml_type) { return find_type_traits(ggml_type) != nullptr; }

bool can_quantize(uint32_t ggml_type) {
    const TypeTraits* t = find_type_traits(ggml_type);
    return t && t->quantize;
}

int64_t block_elements(uint32_t ggml_type) { return checked_traits(ggml_type, 0).block_elements; }

size_t row_size(uint32_t ggml_type, int64_t n) {
    const TypeTraits& t = checked_traits(ggml_type, n);
    size_t bytes = 0;
    if (__builtin_mul_overflow(size_t(n / t.block_elements), t.block_bytes, &bytes))
        fail(Status::invalid_argument, "quant: row of " + std::to_string(n) + " elements overflows size_t");
    return bytes;
}

void dequantize_row(uint32_t ggml_type, const void* src, float* dst, int64_t n) {
    const TypeTraits& t = checked_traits(ggml_type, n);
    if (n == 0) return;
    if (!src || !dst) fail(Status::invalid_argument, "quant: dequantize_row given a null buffer");
    t.decode(src, dst, n);
}

void quantize_row(uint32_t ggml_type, const float* src, void* dst, int64_t n, const float* imatrix) {
    const TypeTraits& t = checked_traits(ggml_type, n);
    if (!t.quantize)
        fail(Status::unsupported, std::string("quant: strata reads ggml type ") + t.name + " but cannot write it");
    if (n == 0) return;
    if (!src || !dst) fail(Status::invalid_argument, "quant: quantize_row given a null buffer");
    t.quantize(src, dst, n, imatrix);
}

}  // namespace strata::quant
