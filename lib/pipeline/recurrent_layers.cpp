#include "pipeline/recurrent_layers.hpp"

#include <algorithm>
#include <iterator>

#include "model/hparams.hpp"

namespace strata::pipeline {

std::vector<uint32_t> recurrent_layers(const model::Hparams& hp, uint32_t begin, uint32_t end) {
    std::vector<uint32_t> out;
    const uint32_t last = uint32_t(std::min<int64_t>(int64_t(end), hp.n_layer));  // the pattern's length
    for (uint32_t il = begin; il < last; ++il)
        if (hp.is_recurrent_layer(int64_t(il))) out.push_back(il);
    return out;
}

namespace {

std::string layer_list(const std::vector<uint32_t>& layers) {
    std::string s = layers.size() == 1 ? "layer " : "layers ";
    for (size_t i = 0; i < layers.size(); ++i) s += (i ? ", " : "") + std::to_string(layers[i]);
    return s;
}

}  // namespace

std::string recurrent_layers_difference(std::span<const uint32_t> head, std::span<const uint32_t> worker) {
    std::vector<uint32_t> head_only, worker_only;
    std::set_difference(head.begin(), head.end(), worker.begin(), worker.end(), std::back_inserter(head_only));
    std::set_difference(worker.begin(), worker.end(), head.begin(), head.end(), std::back_inserter(worker_only));
    std::string out;
    if (!head_only.empty()) out = layer_list(head_only) + " recurrent (KDA) for the head only";
    if (!worker_only.empty())
        out += (out.empty() ? "" : "; ") + layer_list(worker_only) + " recurrent (KDA) for the worker only";
    return out;
}

}  // namespace strata::pipeline
