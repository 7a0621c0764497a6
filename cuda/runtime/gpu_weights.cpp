#include "gpu_weights.hpp"

#include <algorithm>
#include <map>
#include <utility>
#include <string>

#include <cuda_runtime.h>

#include "cuda_error.hpp"
#include "exec/memory/device_plan.hpp"
#include "kernels/products/gemv.cuh"
#include "gpu_types.hpp"
#include "gguf/ggml_types.hpp"
#include "util/error.hpp"

namespace strata::cuda {

namespace {

// Walks every tensor the stage needs in upload order, calling matrix(view, slot, n_mats,
// mat_stride) for matrices and stacks and vector(floats, slot) with the slot of g it fills; the
// upload and its size both come from this one walk. Absent optional tensors are skipped (their
// slots stay null).
struct Walk {
    std::function<void(const model::WeightView&, DeviceMatrix*)> matrix;
    std::function<void(const std::vector<float>&, const float**)> vector;
};

void walk(const model::ModelWeights& w, GpuStageWeights& g, const Walk& f) {
    auto matrix = [&](const model::WeightView& v, DeviceMatrix* slot) {
        if (v.present()) f.matrix(v, slot);
    };
    auto stack = [&](const model::WeightView& v, DeviceStack* slot) {
        if (!v.present()) return;
        f.matrix(v, &slot->first);
        slot->n_mats = v.n_mats;
        slot->mat_stride = v.mat_stride;
    };
    auto vector = [&](const std::vector<float>& v, const float** slot) {
        if (!v.empty()) f.vector(v, slot);
    };
    g.layers.resize(w.layers.size());
    matrix(w.token_embd, &g.token_embd);
    for (size_t i = 0; i < w.layers.size(); ++i) {
        const model::LayerWeights& L = w.layers[i];
        GpuLayerWeights& G = g.layers[i];
        G.recurrent = L.recurrent;
        G.moe = L.moe;
        for (auto [view, slot] : {std::pair{&L.wq, &G.wq}, {&L.wk, &G.wk}, {&L.wv, &G.wv}, {&L.wo, &G.wo},
                                  {&L.w_gate, &G.gate}, {&L.w_up, &G.up}, {&L.w_down, &G.down}, {&L.wq_a, &G.wq_a},
                                  {&L.wq_b, &G.wq_b}, {&L.wkv_a, &G.wkv_a}, {&L.attn_gate, &G.attn_gate},
                                  {&L.f_a, &G.f_a}, {&L.f_b, &G.f_b}, {&L.w_beta, &G.w_beta}, {&L.g_a, &G.g_a},
                                  {&L.g_b, &G.g_b}, {&L.g_full, &G.g_full}, {&L.gate_inp, &G.gate_inp},
                                  {&L.gate_shexp, &G.gate_shexp}, {&L.up_shexp, &G.up_shexp},
                                  {&L.down_shexp, &G.down_shexp}, {&L.routed_down, &G.routed_down},
                                  {&L.routed_up, &G.routed_up}})
            matrix(*view, slot);
        for (auto [view, slot] : {std::pair{&L.wk_b, &G.wk_b}, {&L.wv_b, &G.wv_b}, {&L.gate_exps, &G.gate_exps},
                                  {&L.up_exps, &G.up_exps}, {&L.down_exps, &G.down_exps}})
            stack(*view, slot);
        for (auto [vec, slot] : {std::pair{&L.attn_norm, &G.attn_norm}, {&L.ffn_norm, &G.ffn_norm}, {&L.bq, &G.bq},
                                 {&L.bk, &G.bk}, {&L.bv, &G.bv}, {&L.q_norm, &G.q_norm}, {&L.k_norm, &G.k_norm},
                                 {&L.q_a_norm, &G.q_a_norm}, {&L.kv_a_norm, &G.kv_a_norm}, {&L.conv_q, &G.conv_q},
                                 {&L.conv_k, &G.conv_k}, {&L.conv_v, &G.conv_v}, {&L.dt_bias, &G.dt_bias},
                                 {&L.ssm_a, &G.ssm_a}, {&L.ssm_norm, &G.ssm_norm},
                                 {&L.attn_res_score, &G.attn_res_score}, {&L.ffn_res_score, &G.ffn_res_score},
                                 {&L.exp_probs_b, &G.exp_probs_b}, {&L.routed_norm, &G.routed_norm}})
            vector(*vec, slot);
    }
    if (w.last_stage) {
        vector(w.output_norm, &g.output_norm);
        matrix(w.output, &g.output);  // tied: the same view as token_embd
        vector(w.output_res_score, &g.output_res_score);
    }
}

// Bytes from a view's first byte to its last matrix's end (a stack's matrices may sit apart, as
// the legacy MLA form's value rows do inside attn_kv_b).
uint64_t span_bytes(const model::WeightView& v) {
    return uint64_t(v.n_mats - 1) * v.mat_stride + uint64_t(v.rows) * v.row_bytes;
}

void check_matrix(const model::WeightView& v) {
    if (!v.present()) fail(Status::internal, "GPU upload: tensor " + v.name + " is not bound");
    if (!gemv_supports(v.type))
        fail(Status::unsupported, "GPU upload: tensor " + v.name + " has type " + gguf::ggml_type_name(v.type) +
                                      " (ggml type " + std::to_string(v.type) +
                                      "), which the CUDA products do not take (they take " + gpu_weight_type_names() +
                                      ")");
}

}  // namespace

uint64_t GpuWeights::upload_bytes(const model::ModelWeights& w) {
    uint64_t total = 0;
    std::map<const uint8_t*, bool> seen;  // a tied output is token_embd's upload
    GpuStageWeights slots;
    walk(w, slots,
         {.matrix =
              [&](const model::WeightView& v, DeviceMatrix*) {
                  check_matrix(v);
                  if (seen.emplace(v.data, true).second) total += exec::device_tensor_bytes(span_bytes(v), kDevicePadBytes);
              },
          .vector =
              [&](const std::vector<float>& f, const float**) {
                  total += exec::device_tensor_bytes(f.size() * sizeof(float), kDevicePadBytes);
              }});
    return total;
}

void GpuWeights::matrix_extents(const model::ModelWeights& w, int64_t* max_cols, int64_t* max_rows) {
    *max_cols = *max_rows = 0;
    GpuStageWeights slots;
    walk(w, slots,
         {.matrix =
              [&](const model::WeightView& v, DeviceMatrix*) {
                  *max_cols = std::max(*max_cols, v.cols);
                  *max_rows = std::max(*max_rows, v.rows);
              },
          .vector = [](const std::vector<float>&, const float**) {}});
}

GpuWeights::GpuWeights(const model::ModelWeights& w, const UploadProgress& progress) {
    bytes_ = upload_bytes(w);
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, bytes_); e != cudaSuccess) {
        (void)cudaGetLastError();
        check(e, ("allocating " + std::to_string(bytes_) + " bytes of device memory for the weights").c_str());
    }
    arena_ = static_cast<uint8_t*>(p);
    try {
        // Pads stay zero: a kernel that reads past a tensor's last row reads zeros, never NaN.
        check(cudaMemset(arena_, 0, bytes_), "clearing the weight upload");
        uint64_t offset = 0;
        std::map<const uint8_t*, const uint8_t*> placed;  // host tensor -> its device copy
        auto report = [&] {
            if (progress) progress(offset, bytes_);
        };
        walk(w, *this,
             {.matrix =
                  [&](const model::WeightView& v, DeviceMatrix* m) {
                      const uint8_t* dev = nullptr;
                      if (auto it = placed.find(v.data); it != placed.end()) {
                          dev = it->second;
                      } else {
                          dev = arena_ + offset;
                          check(cudaMemcpy(arena_ + offset, v.data, span_bytes(v), cudaMemcpyHostToDevice),
                                ("uploading " + v.name).c_str());
                          placed.emplace(v.data, dev);
                          offset += exec::device_tensor_bytes(span_bytes(v), kDevicePadBytes);
                          report();
                      }
                      *m = DeviceMatrix{.type = v.type, .cols = v.cols, .rows = v.rows, .row_bytes = v.row_bytes,
                                        .data = dev};
                  },
              .vector =
                  [&](const std::vector<float>& f, const float** out) {
                      const uint64_t n = f.size() * sizeof(float);
                      check(cudaMemcpy(arena_ + offset, f.data(), n, cudaMemcpyHostToDevice), "uploading a norm or bias");
                      *out = reinterpret_cast<const float*>(arena_ + offset);
                      offset += exec::device_tensor_bytes(n, kDevicePadBytes);
                      report();
                  }});
        if (offset != bytes_)
            fail(Status::internal, "GPU upload: placed " + std::to_string(offset) + " bytes, planned " +
                                       std::to_string(bytes_));
    } catch (...) {
        cudaFree(arena_);
        throw;
    }
}

GpuWeights::~GpuWeights() { cudaFree(arena_); }

}  // namespace strata::cuda
