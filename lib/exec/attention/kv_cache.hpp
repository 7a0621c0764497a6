// The KV cache of one sequence for the layers of one stage: per layer, K and V rows of
// n_head_kv * head_dim values per position, stored as f16 (default) or q8_0 (blocks of 32 per
// head; needs head_dim % 32 == 0, checked at construction, never a silent fallback).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::model {
struct Hparams;
}

namespace strata::exec {

enum class KvType { f16, q8_0 };

const char* kv_type_name(KvType type);

// Bytes of one stored row of n values; throws Error(unsupported) saying why a type cannot store
// rows of heads of head_dim values.
uint64_t kv_row_bytes(KvType type, int64_t n_head_kv, int64_t head_dim);

// Cache bytes one position takes in layer il of this model: K and V rows (gqa), one latent row
// (mla), nothing (a recurrent KDA layer). Throws Error(unsupported) as kv_row_bytes /
// latent_row_bytes do (checked whatever the layer, so a refusal does not depend on the range).
uint64_t kv_bytes_per_position_layer(const model::Hparams& hp, KvType type, int64_t il);
// Summed over the layers [first, last).
uint64_t kv_bytes_per_position_range(const model::Hparams& hp, KvType type, int64_t first, int64_t last);
// The fixed recurrent state of a sequence in layers [first, last) (KDA: conv windows and the
// per-head state, float32), independent of the context; 0 for models without recurrent layers.
uint64_t state_bytes_range(const model::Hparams& hp, int64_t first, int64_t last);

class KvCache {
public:
    KvCache() = default;
    KvCache(KvType type, int64_t n_layers, int64_t n_ctx, int64_t n_head_kv, int64_t head_dim);

    KvType type() const { return type_; }
    int64_t n_ctx() const { return n_ctx_; }
    uint64_t bytes() const { return uint64_t(data_.size()); }

    // Stores the K and V rows (n_head_kv * head_dim floats each) of position pos in layer il.
    void store(int64_t il, int64_t pos, const float* k, const float* v);
    // Reads head h of position pos (head_dim floats) into out.
    void load_k(int64_t il, int64_t pos, int64_t h, float* out) const;
    void load_v(int64_t il, int64_t pos, int64_t h, float* out) const;
    // The stored bytes of head h of position pos (K or V); the same head of position pos + i is
    // i * row_bytes() further on. f16: head_dim binary16; q8_0: head_dim / 32 blocks.
    const uint8_t* k_head(int64_t il, int64_t pos, int64_t h) const { return at(il, 0, pos) + uint64_t(h) * head_bytes(); }
    const uint8_t* v_head(int64_t il, int64_t pos, int64_t h) const { return at(il, 1, pos) + uint64_t(h) * head_bytes(); }
    uint64_t row_bytes() const { return row_bytes_; }

private:
    const uint8_t* at(int64_t il, int which, int64_t pos) const;
    uint64_t head_bytes() const { return row_bytes_ / uint64_t(n_head_kv_); }
    void load(const uint8_t* row, int64_t h, float* out) const;

    KvType type_ = KvType::f16;
    int64_t n_layers_ = 0, n_ctx_ = 0, n_head_kv_ = 0, head_dim_ = 0;
    uint64_t row_bytes_ = 0;
    std::vector<uint8_t> data_;  // [n_layers][2 (K, V)][n_ctx][row_bytes]
};

}  // namespace strata::exec
