#include "latent_cache.hpp"

#include "quant/convert.hpp"
#include "quant/codecs/q8_0.hpp"
#include "util/checked.hpp"
#include "util/error.hpp"

namespace strata::exec {

uint64_t latent_row_bytes(KvType type, int64_t kv_lora, int64_t n_rot) {
    if (kv_lora <= 0 || n_rot <= 0) fail(Status::invalid_argument, "latent KV cache: widths must be positive");
    const uint64_t n = uint64_t(kv_lora + n_rot);
    if (type == KvType::f16) return n * 2;
    if (kv_lora % quant::kQK8_0 != 0 || n_rot % quant::kQK8_0 != 0)
        fail(Status::unsupported, "KV cache type q8_0 cannot store this model's latent cache: q8_0 quantizes blocks of 32 "
                                  "values with one scale, and the latent (kv_lora_rank " + std::to_string(kv_lora) +
                                      ") and the rope key (" + std::to_string(n_rot) +
                                      " values) are not both multiples of 32, so a block would mix the two (use the f16 KV cache)");
    return n / quant::kQK8_0 * sizeof(quant::block_q8_0);
}

LatentCache::LatentCache(KvType type, int64_t n_layers, int64_t n_ctx, int64_t kv_lora, int64_t n_rot)
    : type_(type), n_layers_(n_layers), n_ctx_(n_ctx), kv_lora_(kv_lora), n_rot_(n_rot),
      row_bytes_(latent_row_bytes(type, kv_lora, n_rot)) {
    auto total = util::checked_mul(row_bytes_, uint64_t(n_ctx));
    if (total) total = util::checked_mul(*total, uint64_t(n_layers));
    if (!total || n_ctx <= 0 || n_layers <= 0) fail(Status::invalid_argument, "latent KV cache: unusable size");
    data_.resize(*total);
}

void LatentCache::store(int64_t il, int64_t pos, const float* row) {
    auto* dst = const_cast<uint8_t*>(at(il, pos));
    if (type_ == KvType::f16) quant::f32_to_f16_row(row, reinterpret_cast<uint16_t*>(dst), width());
    else quant::quantize_row_q8_0(row, reinterpret_cast<quant::block_q8_0*>(dst), width());
}

void LatentCache::load(int64_t il, int64_t first, int64_t n, float* out) const {
    const int64_t w = width();
    for (int64_t p = 0; p < n; ++p) {
        const uint8_t* src = at(il, first + p);
        if (type_ == KvType::f16) quant::f16_to_f32_row(reinterpret_cast<const uint16_t*>(src), out + p * w, w);
        else quant::dequantize_row_q8_0(reinterpret_cast<const quant::block_q8_0*>(src), out + p * w, w);
    }
}

}  // namespace strata::exec
