// The weights of one llama-family stage in device memory, uploaded once from the mapped tensors
// (model::bind_weights): one device allocation holding every tensor, each starting on a 256-byte
// boundary and followed by kDevicePadBytes (exec::device_tensor_bytes), so kernels may read
// aligned 16-byte loads past the last row. Matrices keep their GGUF type (IQ1_S stays in its
// 50-byte blocks); norms and biases are float32 vectors; token_embd keeps its type (get_rows) on
// the first stage; a tied output shares token_embd's upload.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_forward.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "device_matrix.hpp"
#include "model/weights.hpp"

namespace strata::cuda {

struct GpuLayerWeights {
    DeviceMatrix wq, wk, wv, wo, gate, up, down;
    const float* attn_norm = nullptr;
    const float* ffn_norm = nullptr;
    const float* bq = nullptr;  // qwen2 (all three or none)
    const float* bk = nullptr;
    const float* bv = nullptr;
    const float* q_norm = nullptr;  // qwen3 (both or none)
    const float* k_norm = nullptr;
};

// (done_bytes, total_bytes) of the upload, called after each tensor.
using UploadProgress = std::function<void(uint64_t, uint64_t)>;

// Where each tensor of the stage lives on the device.
struct GpuStageWeights {
    DeviceMatrix token_embd;  // first stage (data null otherwise)
    std::vector<GpuLayerWeights> layers;
    const float* output_norm = nullptr;  // last stage
    DeviceMatrix output;                 // last stage (token_embd's upload when tied)
};

class GpuWeights : public GpuStageWeights {
public:
    // Device bytes the upload of w takes (what the memory plan counts), without uploading.
    // Throws Error(unsupported) naming a tensor whose type the GPU products cannot take.
    static uint64_t upload_bytes(const model::ModelWeights& w);

    // Allocates and uploads (synchronously); throws Error(out_of_memory) naming the size when
    // the allocation fails.
    GpuWeights(const model::ModelWeights& w, const UploadProgress& progress);
    ~GpuWeights();
    GpuWeights(const GpuWeights&) = delete;
    GpuWeights& operator=(const GpuWeights&) = delete;

    uint64_t bytes() const { return bytes_; }

private:
    uint8_t* arena_ = nullptr;
    uint64_t bytes_ = 0;
};

}  // namespace strata::cuda
