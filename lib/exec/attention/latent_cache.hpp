// The latent KV cache of multi-head latent attention (deepseek2): per layer and position one row
// of kv_lora (the normalized latent) + n_rot (the rotated key shared by every head) values, f16
// by default or q8_0 (blocks of 32; needs both widths to be multiples of 32 so that no block
// mixes the latent with the rope key, checked at construction, never a silent fallback).
#pragma once

#include <cstdint>
#include <vector>

#include "kv_cache.hpp"

namespace strata::exec {

// Bytes of one row; throws Error(unsupported) saying why a type cannot store these widths.
uint64_t latent_row_bytes(KvType type, int64_t kv_lora, int64_t n_rot);

class LatentCache {
public:
    LatentCache() = default;
    LatentCache(KvType type, int64_t n_layers, int64_t n_ctx, int64_t kv_lora, int64_t n_rot);

    uint64_t bytes() const { return uint64_t(data_.size()); }
    KvType type() const { return type_; }
    int64_t width() const { return kv_lora_ + n_rot_; }

    // Stores kv_lora + n_rot floats (latent, then rope key) at position pos of layer il.
    void store(int64_t il, int64_t pos, const float* row);
    // Reads positions [0, n) of layer il as float32 rows of width() values.
    void load(int64_t il, int64_t n, float* out) const { load(il, 0, n, out); }
    // Reads positions [first, first + n) (a Context with several sequences keeps each one's
    // positions at its own offset).
    void load(int64_t il, int64_t first, int64_t n, float* out) const;
    // The stored row of position pos in layer il (f16: width() binary16; q8_0: width() / 32
    // blocks); position pos + i is i * row_bytes() further on.
    const uint8_t* row_data(int64_t il, int64_t pos) const { return at(il, pos); }
    uint64_t row_bytes() const { return row_bytes_; }

private:
    const uint8_t* at(int64_t il, int64_t pos) const {
        return data_.data() + (uint64_t(il) * uint64_t(n_ctx_) + uint64_t(pos)) * row_bytes_;
    }

    KvType type_ = KvType::f16;
    int64_t n_layers_ = 0, n_ctx_ = 0, kv_lora_ = 0, n_rot_ = 0;
    uint64_t row_bytes_ = 0;
    std::vector<uint8_t> data_;  // [n_layers][n_ctx][row_bytes]
};

}  // namespace strata::exec
