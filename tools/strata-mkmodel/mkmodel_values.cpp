// Seeded random values for strata-mkmodel (see mkmodel_values.hpp).
#include "mkmodel_values.hpp"

#include <random>

namespace mkmodel {
namespace {

std::vector<float> draw(const TensorSpec& spec, std::seed_seq& seq, int64_t count) {
    std::mt19937_64 rng(seq);
    std::vector<float> data(static_cast<size_t>(count));
    if (spec.uniform) {
        std::uniform_real_distribution<float> dist(spec.a, spec.b);
        for (auto& v : data) v = dist(rng);
    } else {
        std::normal_distribution<float> dist(spec.a, spec.b);
        for (auto& v : data) v = dist(rng);
    }
    return data;
}

// attn_k_b [nope, C, H] or attn_v_b [C, v_dim, H] out of attn_kv_b [C, H*(nope+v_dim)], whose
// head h holds nope k rows then v_dim v rows (k_b[h][c][d] = kv_b[h*(nope+v_dim)+d][c],
// v_b[h][j] = kv_b[h*(nope+v_dim)+nope+j]).
std::vector<float> split_kv_b(const TensorSpec& spec, const std::vector<float>& kv_b) {
    std::vector<float> out(size_t(spec.count()));
    if (spec.derive == Derive::k_b) {
        const int64_t nope = spec.shape[0], c_dim = spec.shape[1], heads = spec.shape[2], v_dim = spec.kv_other;
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t c = 0; c < c_dim; ++c)
                for (int64_t d = 0; d < nope; ++d)
                    out[size_t((h * c_dim + c) * nope + d)] = kv_b[size_t((h * (nope + v_dim) + d) * c_dim + c)];
    } else {
        const int64_t c_dim = spec.shape[0], v_dim = spec.shape[1], heads = spec.shape[2], nope = spec.kv_other;
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t j = 0; j < v_dim; ++j)
                for (int64_t c = 0; c < c_dim; ++c)
                    out[size_t((h * v_dim + j) * c_dim + c)] = kv_b[size_t((h * (nope + v_dim) + nope + j) * c_dim + c)];
    }
    return out;
}

}  // namespace

std::vector<float> make_values(const TensorSpec& spec, uint64_t seed) {
    std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(spec.key), uint32_t(spec.key >> 32)};
    if (spec.derive == Derive::none) return draw(spec, seq, spec.count());
    const int64_t heads = spec.shape[2];
    const int64_t c_dim = spec.derive == Derive::k_b ? spec.shape[1] : spec.shape[0];
    const int64_t head_rows = spec.derive == Derive::k_b ? spec.shape[0] + spec.kv_other : spec.shape[1] + spec.kv_other;
    return split_kv_b(spec, draw(spec, seq, c_dim * heads * head_rows));
}

std::vector<float> make_slice(const TensorSpec& spec, uint64_t seed, int64_t slice) {
    std::seed_seq seq{uint32_t(seed),      uint32_t(seed >> 32),  uint32_t(spec.key),
                      uint32_t(spec.key >> 32), uint32_t(slice), uint32_t(uint64_t(slice) >> 32)};
    return draw(spec, seq, spec.slice_count());
}

}  // namespace mkmodel
