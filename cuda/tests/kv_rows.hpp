// The bytes exec::KvCache::store writes for one K or V row (test_ops and test_attention): the
// same lib/quant functions it calls (f16: f32_to_f16_row; q8_0: quantize_row_q8_0 over the whole
// row, whose 32-value blocks never straddle a head since head_dim % 32 == 0). KvCache keeps its
// bytes private, so the tests prove agreement with it by decoding these bytes and comparing them
// with KvCache::load_k / load_v bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/convert.hpp"
#include "quant/half.hpp"
#include "quant/codecs/q8_0.hpp"

namespace strata::cuda_test {

inline std::vector<uint8_t> kv_row_bytes_host(bool q8_0, const float* x, int64_t n) {
    if (q8_0) {
        std::vector<uint8_t> bytes(static_cast<size_t>(n / quant::kQK8_0) * sizeof(quant::block_q8_0));
        quant::quantize_row_q8_0(x, reinterpret_cast<quant::block_q8_0*>(bytes.data()), n);
        return bytes;
    }
    std::vector<uint8_t> bytes(static_cast<size_t>(n) * 2);
    quant::f32_to_f16_row(x, reinterpret_cast<uint16_t*>(bytes.data()), n);
    return bytes;
}

// Head h (head_dim values) of a stored row, decoded as KvCache::load does.
inline std::vector<float> kv_head_from_bytes(bool q8_0, const uint8_t* row, int64_t h, int64_t head_dim) {
    std::vector<float> out(static_cast<size_t>(head_dim));
    if (q8_0) {
        const auto* b = reinterpret_cast<const quant::block_q8_0*>(row) + h * (head_dim / quant::kQK8_0);
        quant::dequantize_row_q8_0(b, out.data(), head_dim);
    } else {
        quant::f16_to_f32_row(reinterpret_cast<const uint16_t*>(row) + h * head_dim, out.data(), head_dim);
    }
    return out;
}

}  // namespace strata::cuda_test
