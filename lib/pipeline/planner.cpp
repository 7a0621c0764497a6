#include "pipeline/planner.hpp"

#include <algorithm>
#include <charconv>
#include <numeric>

#include "gguf/model_file.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"
#include "util/error.hpp"

namespace strata::pipeline {
namespace {

int parse_int(std::string_view s, const std::string& part) {
    int v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 0)
        fail(Status::invalid_argument, "layer plan part \"" + part + "\" is not A:B with non-negative integers");
    return v;
}

std::string range_text(const LayerRange& r) { return std::to_string(r.first) + ":" + std::to_string(r.second); }

std::string gib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(1ull << 30));
    return buf;
}

}  // namespace

std::vector<LayerRange> parse_layer_plan(const std::string& text) {
    std::vector<LayerRange> plan;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string part = text.substr(start, comma - start);
        const size_t colon = part.find(':');
        if (colon == std::string::npos)
            fail(Status::invalid_argument, "layer plan part \"" + part + "\" is not A:B");
        plan.emplace_back(parse_int(std::string_view(part).substr(0, colon), part),
                          parse_int(std::string_view(part).substr(colon + 1), part));
        start = comma + 1;
    }
    return plan;
}

std::string format_layer_plan(const std::vector<LayerRange>& plan) {
    std::string out;
    for (const auto& r : plan) out += (out.empty() ? "" : ",") + range_text(r);
    return out;
}

void check_layer_plan(const std::vector<LayerRange>& plan, int n_layers, size_t n_stages) {
    if (plan.size() != n_stages)
        fail(Status::invalid_argument, "the layer plan " + format_layer_plan(plan) + " has " +
                                           std::to_string(plan.size()) + " ranges for " + std::to_string(n_stages) +
                                           " stages (the head and each worker)");
    int next = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
        const auto& r = plan[i];
        if (r.first != next)
            fail(Status::invalid_argument, "stage " + std::to_string(i) + "'s range " + range_text(r) +
                                               " should start at layer " + std::to_string(next) +
                                               ": ranges must be contiguous from 0");
        if (r.second <= r.first)
            fail(Status::invalid_argument, "stage " + std::to_string(i) + "'s range " + range_text(r) +
                                               " holds no layer");
        next = r.second;
    }
    if (next != n_layers)
        fail(Status::invalid_argument, "the layer plan " + format_layer_plan(plan) + " ends at layer " +
                                           std::to_string(next) + ", the model has " + std::to_string(n_layers));
}

uint64_t LayerCosts::stage_bytes(const LayerRange& r, bool first, bool last) const {
    uint64_t sum = (first ? first_stage_bytes : 0) + (last ? last_stage_bytes : 0) - (first && last ? tied_output_bytes : 0);
    for (int i = r.first; i < r.second; ++i) sum += layer_bytes[size_t(i)];
    return sum;
}

LayerCosts weight_costs(const gguf::ModelFile& file) {
    const model::Hparams hp = model::read_hparams(file);
    LayerCosts c;
    c.layer_bytes.assign(size_t(hp.n_layer), 0);
    bool tied = true;
    for (const auto& t : file.tensors()) {
        if (t.name.rfind("blk.", 0) == 0) {
            int layer = -1;
            const char* begin = t.name.c_str() + 4;
            auto [p, ec] = std::from_chars(begin, t.name.c_str() + t.name.size(), layer);
            if (ec == std::errc() && *p == '.' && layer >= 0 && layer < hp.n_layer) c.layer_bytes[size_t(layer)] += t.nbytes;
        } else if (t.name == "token_embd.weight") {
            c.first_stage_bytes += t.nbytes;
        } else if (t.name == "output.weight") {
            c.last_stage_bytes += t.nbytes;
            tied = false;
        } else {
            c.last_stage_bytes += t.nbytes;  // output_norm and anything else the head of the model uses
        }
    }
    if (tied)  // the output projection reads the token embeddings on the last stage too
        if (auto i = file.find_tensor("token_embd.weight")) {
            c.tied_output_bytes = file.tensors()[*i].nbytes;
            c.last_stage_bytes += c.tied_output_bytes;
        }
    for (int il = 0; il < int(hp.n_layer); ++il) c.layer_bytes[size_t(il)] += model::owned_layer_bytes(file, hp, il);
    return c;
}

LayerCosts layer_costs(const gguf::ModelFile& file, int64_t n_ctx, exec::KvType kv_type) {
    LayerCosts c = weight_costs(file);
    const model::Hparams hp = model::read_hparams(file);
    for (size_t il = 0; il < c.layer_bytes.size(); ++il)
        c.layer_bytes[il] += exec::kv_bytes_per_position_layer(hp, kv_type, int64_t(il)) * uint64_t(n_ctx) +
                             exec::state_bytes_range(hp, int64_t(il), int64_t(il) + 1);
    return c;
}

uint64_t gpu_stage_capacity(uint64_t free_bytes, uint64_t scratch_bytes) {
    if (free_bytes == 0) return 0;
    return free_bytes > scratch_bytes ? free_bytes - scratch_bytes : 1;
}

std::vector<LayerRange> plan_by_memory(const LayerCosts& costs, const std::vector<uint64_t>& capacity) {
    const int n_layers = int(costs.layer_bytes.size());
    const size_t n = capacity.size();
    if (n == 0 || size_t(n_layers) < n)
        fail(Status::invalid_argument, std::to_string(n_layers) + " layers cannot be split over " +
                                           std::to_string(n) + " stages (each needs at least one)");
    // Unknown capacity counts as the largest known one, so that an even split is the default.
    const uint64_t known_max = *std::max_element(capacity.begin(), capacity.end());
    std::vector<double> weight(n);
    for (size_t i = 0; i < n; ++i) weight[i] = double(capacity[i] ? capacity[i] : std::max<uint64_t>(known_max, 1));
    const double total = std::accumulate(weight.begin(), weight.end(), 0.0);

    // Layer counts proportional to capacity (largest remainder), at least one each.
    std::vector<int> count(n);
    std::vector<std::pair<double, size_t>> remainder;
    int assigned = 0;
    for (size_t i = 0; i < n; ++i) {
        const double exact = double(n_layers) * weight[i] / total;
        count[i] = std::max(1, int(exact));
        assigned += count[i];
        remainder.emplace_back(exact - double(int(exact)), i);
    }
    std::sort(remainder.begin(), remainder.end(), [](auto a, auto b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    for (size_t k = 0; assigned < n_layers; k = (k + 1) % n, ++assigned) ++count[remainder[k].second];
    while (assigned > n_layers) {  // the at-least-one rule overshot: take from the largest
        --*std::max_element(count.begin(), count.end());
        --assigned;
    }

    auto ranges = [&] {
        std::vector<LayerRange> r(n);
        int at = 0;
        for (size_t i = 0; i < n; ++i) { r[i] = {at, at + count[i]}; at += count[i]; }
        return r;
    };
    auto need = [&](const std::vector<LayerRange>& r, size_t i) { return costs.stage_bytes(r[i], i == 0, i + 1 == n); };
    auto fits = [&](const std::vector<LayerRange>& r, size_t i) { return capacity[i] == 0 || need(r, i) <= capacity[i]; };

    // Move layers off stages that do not fit onto the neighbour with the most room left.
    for (int guard = 0; guard < n_layers * int(n); ++guard) {
        auto r = ranges();
        size_t bad = n;
        for (size_t i = 0; i < n && bad == n; ++i) if (!fits(r, i)) bad = i;
        if (bad == n) return r;
        if (count[bad] <= 1) break;
        auto room = [&](size_t j) { return capacity[j] == 0 ? INT64_MAX : int64_t(capacity[j]) - int64_t(need(r, j)); };
        size_t to = n;
        if (bad > 0) to = bad - 1;
        if (bad + 1 < n && (to == n || room(bad + 1) > room(to))) to = bad + 1;
        --count[bad];
        ++count[to];
    }
    const auto r = ranges();
    std::string detail;
    for (size_t i = 0; i < n; ++i)
        detail += "; stage " + std::to_string(i) + " " + range_text(r[i]) + " needs " + gib(need(r, i)) +
                  (capacity[i] ? ", has " + gib(capacity[i]) : ", capacity unknown");
    fail(Status::out_of_memory, "no layer plan fits the stages' memory" + detail);
}

}  // namespace strata::pipeline
