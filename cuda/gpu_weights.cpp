#include "gpu_weights.hpp"

#include <map>
#include <string>

#include <cuda_runtime.h>

#include "cuda_error.hpp"
#include "exec/device_plan.hpp"
#include "gemv.cuh"
#include "gguf/ggml_types.hpp"
#include "util/error.hpp"

namespace strata::cuda {

namespace {

// Walks every tensor the stage needs in upload order, calling matrix(view, slot) and
// vector(floats, slot) with the slot of g it fills; the upload and its size both come from this
// one walk.
struct Walk {
    std::function<void(const model::WeightView&, DeviceMatrix*)> matrix;
    std::function<void(const std::vector<float>&, const float**)> vector;
};

void walk(const model::ModelWeights& w, GpuStageWeights& g, const Walk& f) {
    g.layers.resize(w.layers.size());
    if (w.token_embd.present()) f.matrix(w.token_embd, &g.token_embd);
    for (size_t i = 0; i < w.layers.size(); ++i) {
        const model::LayerWeights& L = w.layers[i];
        GpuLayerWeights& G = g.layers[i];
        f.matrix(L.wq, &G.wq);
        f.matrix(L.wk, &G.wk);
        f.matrix(L.wv, &G.wv);
        f.matrix(L.wo, &G.wo);
        f.matrix(L.w_gate, &G.gate);
        f.matrix(L.w_up, &G.up);
        f.matrix(L.w_down, &G.down);
        f.vector(L.attn_norm, &G.attn_norm);
        f.vector(L.ffn_norm, &G.ffn_norm);
        if (!L.bq.empty()) {
            f.vector(L.bq, &G.bq);
            f.vector(L.bk, &G.bk);
            f.vector(L.bv, &G.bv);
        }
        if (!L.q_norm.empty()) {
            f.vector(L.q_norm, &G.q_norm);
            f.vector(L.k_norm, &G.k_norm);
        }
    }
    if (w.last_stage) {
        f.vector(w.output_norm, &g.output_norm);
        f.matrix(w.output, &g.output);  // tied: the same view as token_embd
    }
}

void check_matrix(const model::WeightView& v) {
    if (!v.present()) fail(Status::internal, "GPU upload: tensor " + v.name + " is not bound");
    if (!gemv_supports(v.type))
        fail(Status::unsupported, "GPU upload: tensor " + v.name + " has type " + gguf::ggml_type_name(v.type) +
                                      ", which the CUDA products do not take (f32, f16, bf16, q8_0, iq1_s)");
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
                  if (seen.emplace(v.data, true).second) total += exec::device_tensor_bytes(v.nbytes, kDevicePadBytes);
              },
          .vector =
              [&](const std::vector<float>& f, const float**) {
                  total += exec::device_tensor_bytes(f.size() * sizeof(float), kDevicePadBytes);
              }});
    return total;
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
                          check(cudaMemcpy(arena_ + offset, v.data, v.nbytes, cudaMemcpyHostToDevice),
                                ("uploading " + v.name).c_str());
                          placed.emplace(v.data, dev);
                          offset += exec::device_tensor_bytes(v.nbytes, kDevicePadBytes);
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
