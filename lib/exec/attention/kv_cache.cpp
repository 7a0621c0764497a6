#include "kv_cache.hpp"

#include "latent_cache.hpp"
#include "model/hparams.hpp"
#include "quant/convert.hpp"
#include "quant/codecs/q8_0.hpp"
#include "util/checked.hpp"
#include "util/error.hpp"

namespace strata::exec {

const char* kv_type_name(KvType type) { return type == KvType::q8_0 ? "q8_0" : "f16"; }

uint64_t kv_row_bytes(KvType type, int64_t n_head_kv, int64_t head_dim) {
    if (n_head_kv <= 0 || head_dim <= 0) fail(Status::invalid_argument, "KV cache: head count and head dimension must be positive");
    const uint64_t n = uint64_t(n_head_kv) * uint64_t(head_dim);
    if (type == KvType::f16) return n * 2;
    // Blocks must not straddle heads: attention reads one head at a time.
    if (head_dim % quant::kQK8_0 != 0)
        fail(Status::unsupported, "KV cache type q8_0 cannot store heads of dimension " + std::to_string(head_dim) +
                                      ": q8_0 quantizes blocks of 32 values and a head's " + std::to_string(head_dim) +
                                      " values are not a multiple of 32 (use the f16 KV cache)");
    return n / quant::kQK8_0 * sizeof(quant::block_q8_0);
}

uint64_t kv_bytes_per_position_layer(const model::Hparams& hp, KvType type, int64_t il) {
    const uint64_t row = hp.is_mla() ? latent_row_bytes(type, hp.mla.kv_lora_rank, hp.rope.n_rot)
                                     : 2 * kv_row_bytes(type, hp.n_head_kv, hp.head_dim);
    return hp.is_recurrent_layer(il) ? 0 : row;
}

uint64_t kv_bytes_per_position_range(const model::Hparams& hp, KvType type, int64_t first, int64_t last) {
    uint64_t sum = 0;
    for (int64_t il = first; il < last; ++il) sum += kv_bytes_per_position_layer(hp, type, il);
    return sum;
}

uint64_t state_bytes_range(const model::Hparams& hp, int64_t first, int64_t last) {
    const int64_t D = hp.kda_width(), dk = hp.kda.head_dim, K = hp.kda.conv_kernel;
    const uint64_t per_layer = (uint64_t(3 * (K - 1) * D) + uint64_t(hp.n_head * dk * dk)) * sizeof(float);
    uint64_t sum = 0;
    for (int64_t il = first; il < last; ++il) sum += hp.is_recurrent_layer(il) ? per_layer : 0;
    return sum;
}

KvCache::KvCache(KvType type, int64_t n_layers, int64_t n_ctx, int64_t n_head_kv, int64_t head_dim)
    : type_(type), n_layers_(n_layers), n_ctx_(n_ctx), n_head_kv_(n_head_kv), head_dim_(head_dim),
      row_bytes_(kv_row_bytes(type, n_head_kv, head_dim)) {
    auto total = util::checked_mul(row_bytes_, uint64_t(n_ctx) * 2);
    if (total) total = util::checked_mul(*total, uint64_t(n_layers));
    if (!total || n_ctx <= 0 || n_layers <= 0) fail(Status::invalid_argument, "KV cache: unusable size");
    data_.resize(*total);
}

const uint8_t* KvCache::at(int64_t il, int which, int64_t pos) const {
    return data_.data() + ((uint64_t(il) * 2 + uint64_t(which)) * uint64_t(n_ctx_) + uint64_t(pos)) * row_bytes_;
}

void KvCache::store(int64_t il, int64_t pos, const float* k, const float* v) {
    const int64_t n = n_head_kv_ * head_dim_;
    for (int which = 0; which < 2; ++which) {
        auto* row = const_cast<uint8_t*>(at(il, which, pos));
        const float* src = which == 0 ? k : v;
        if (type_ == KvType::f16) quant::f32_to_f16_row(src, reinterpret_cast<uint16_t*>(row), n);
        else quant::quantize_row_q8_0(src, reinterpret_cast<quant::block_q8_0*>(row), n);
    }
}

void KvCache::load(const uint8_t* row, int64_t h, float* out) const {
    if (type_ == KvType::f16) {
        quant::f16_to_f32_row(reinterpret_cast<const uint16_t*>(row) + h * head_dim_, out, head_dim_);
    } else {
        const auto* b = reinterpret_cast<const quant::block_q8_0*>(row) + h * (head_dim_ / quant::kQK8_0);
        quant::dequantize_row_q8_0(b, out, head_dim_);
    }
}

void KvCache::load_k(int64_t il, int64_t pos, int64_t h, float* out) const { load(at(il, 0, pos), h, out); }
void KvCache::load_v(int64_t il, int64_t pos, int64_t h, float* out) const { load(at(il, 1, pos), h, out); }

}  // namespace strata::exec
