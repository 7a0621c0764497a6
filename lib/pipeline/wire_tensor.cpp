#include "pipeline/wire_tensor.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "quant/half.hpp"
#include "util/error.hpp"

namespace strata::pipeline {

using transport::DType;

transport::Tensor encode_hidden(std::span<const float> values, uint64_t rows, uint64_t cols, DType dtype) {
    transport::Tensor t;
    t.dtype = dtype;
    t.dims = {rows, cols};
    if (dtype == DType::f32) {
        t.data.resize(values.size() * sizeof(float));
        std::memcpy(t.data.data(), values.data(), t.data.size());
        return t;
    }
    t.data.resize(values.size() * 2);
    for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = dtype == DType::f16 ? quant::f32_to_f16(values[i]) : quant::f32_to_bf16(values[i]);
        std::memcpy(t.data.data() + 2 * i, &h, 2);
    }
    return t;
}

// The hidden states as f32, refusing a shape other than [n_tokens, n_embd], a byte count that
// does not match, and non-finite values (they would poison the KV cache for good).
std::vector<float> decode_hidden(const transport::Tensor& t, size_t n_tokens, int64_t n_embd) {
    if (t.dims.size() != 2 || t.dims[0] != n_tokens || t.dims[1] != uint64_t(n_embd)) {
        std::string shape;
        for (size_t i = 0; i < t.dims.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.dims[i]);
        fail(Status::invalid_argument, "hidden states have shape [" + shape + "], expected [" +
                                           std::to_string(n_tokens) + ", " + std::to_string(n_embd) + "]");
    }
    const size_t count = n_tokens * size_t(n_embd);
    size_t width = 0;
    switch (t.dtype) {
    case DType::f32: width = 4; break;
    case DType::f16:
    case DType::bf16: width = 2; break;
    default: fail(Status::invalid_argument, "hidden states have an unknown element type");
    }
    if (t.data.size() != count * width)
        fail(Status::invalid_argument, "hidden states hold " + std::to_string(t.data.size()) + " bytes, expected " +
                                           std::to_string(count * width));
    std::vector<float> out(count);
    if (t.dtype == DType::f32) {
        std::memcpy(out.data(), t.data.data(), count * sizeof(float));
    } else {
        for (size_t i = 0; i < count; ++i) {
            uint16_t h;
            std::memcpy(&h, t.data.data() + 2 * i, 2);
            out[i] = t.dtype == DType::f16 ? quant::f16_to_f32(h) : quant::bf16_to_f32(h);
        }
    }
    for (size_t i = 0; i < count; ++i)
        if (!std::isfinite(out[i]))
            fail(Status::invalid_argument, "hidden state of token " + std::to_string(i / size_t(n_embd)) +
                                               ", element " + std::to_string(i % size_t(n_embd)) + " is not finite");
    return out;
}

}  // namespace strata::pipeline
