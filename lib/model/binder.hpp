// Binding tensors of a mapped model file as weight views, each checked for presence, type and
// shape (internal to model/: weights.cpp and the architecture binders use it).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "model/weights.hpp"

namespace strata::gguf {
class ModelFile;
struct TensorInfo;
}  // namespace strata::gguf

namespace strata::model {

class Binder {
public:
    explicit Binder(const gguf::ModelFile& file) : file_(file) {}

    bool has(const std::string& name) const;
    // A matrix of ggml shape [cols, rows] of a type the matmul supports.
    WeightView matrix(const std::string& name, int64_t cols, int64_t rows);
    // A stack of n matrices: ggml shape [cols, rows, n].
    WeightView stack(const std::string& name, int64_t cols, int64_t rows, int64_t n);
    // A vector of n values (norm weights, biases), converted to float32; empty when absent and
    // not required.
    std::vector<float> vec(const std::string& name, int64_t n, bool required = true);
    // Any tensor of exactly n values (whatever its dimensions: conv kernels, per-head scalars),
    // converted to float32 in storage order.
    std::vector<float> flat(const std::string& name, int64_t n);
    // Every row of a matrix as float32 (small tensors only: legacy MLA kv_b).
    std::vector<float> rows_f32(const WeightView& w) const;

    uint64_t bytes() const { return bytes_; }  // every distinct tensor bound so far

private:
    const gguf::TensorInfo* find(const std::string& name, bool required);
    WeightView view(const std::string& name, const gguf::TensorInfo& t, int64_t cols, int64_t rows, int64_t n);

    const gguf::ModelFile& file_;
    std::set<std::string> seen_;
    uint64_t bytes_ = 0;
};

// The deepseek2 parts of one layer (weights_deepseek2.cpp).
void bind_mla_attention(Binder& b, const Hparams& hp, const std::string& prefix, LayerWeights& L, uint64_t& owned_bytes);
void bind_moe_ffn(Binder& b, const Hparams& hp, const std::string& prefix, LayerWeights& L);
// The Kimi parts (weights_kimi.cpp): a KDA layer; the K3 extras of a layer.
void bind_kda_attention(Binder& b, const Hparams& hp, const std::string& prefix, LayerWeights& L);
void bind_k3_extras(Binder& b, const Hparams& hp, const std::string& prefix, LayerWeights& L);

}  // namespace strata::model
