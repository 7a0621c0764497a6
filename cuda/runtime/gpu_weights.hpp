// The weights of one stage in device memory, uploaded once from the mapped tensors
// (model::bind_weights): one device allocation holding every tensor, each starting on a 256-byte
// boundary and followed by kDevicePadBytes (exec::device_tensor_bytes), so kernels may read
// aligned 16-byte loads past the last row. Matrices keep their GGUF type (IQ1_S stays in its
// 50-byte blocks); stacks (experts, MLA's per-head k_b and v_b) are uploaded whole and viewed a
// matrix at a time; norms, biases, conv kernels and score vectors are float32 vectors; token_embd
// keeps its type (get_rows) on the first stage; a tied output shares token_embd's upload.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_forward.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "device_matrix.hpp"
#include "model/weights.hpp"

namespace strata::cuda {

// n_mats matrices of one shape, mat_stride bytes apart (model::WeightView's stacks).
struct DeviceStack {
    DeviceMatrix first;  // matrix 0
    int64_t n_mats = 0;
    uint64_t mat_stride = 0;
    bool present() const { return first.data != nullptr; }
    DeviceMatrix mat(int64_t i) const {
        DeviceMatrix m = first;
        m.data = first.data + uint64_t(i) * mat_stride;
        return m;
    }
};

struct GpuLayerWeights {
    // grouped-query attention (and KDA's q, k, v, o projections)
    DeviceMatrix wq, wk, wv, wo;
    const float* attn_norm = nullptr;
    const float* ffn_norm = nullptr;
    const float* bq = nullptr;  // qwen2 (all three or none)
    const float* bk = nullptr;
    const float* bv = nullptr;
    const float* q_norm = nullptr;  // qwen3 (both or none)
    const float* k_norm = nullptr;
    // dense FFN
    DeviceMatrix gate, up, down;
    // latent attention (deepseek2.md)
    DeviceMatrix wq_a, wq_b, wkv_a, attn_gate;
    const float* q_a_norm = nullptr;
    const float* kv_a_norm = nullptr;
    DeviceStack wk_b, wv_b;
    // KDA (kimi_linear.md)
    bool recurrent = false;
    const float* conv_q = nullptr;
    const float* conv_k = nullptr;
    const float* conv_v = nullptr;
    DeviceMatrix f_a, f_b, w_beta, g_a, g_b, g_full;
    const float* dt_bias = nullptr;
    const float* ssm_a = nullptr;
    const float* ssm_norm = nullptr;
    // K3 attention residuals
    const float* attn_res_score = nullptr;
    const float* ffn_res_score = nullptr;
    // MoE
    bool moe = false;
    DeviceMatrix gate_inp, gate_shexp, up_shexp, down_shexp, routed_down, routed_up;
    const float* exp_probs_b = nullptr;
    const float* routed_norm = nullptr;
    DeviceStack gate_exps, up_exps, down_exps;
};

// (done_bytes, total_bytes) of the upload, called after each tensor.
using UploadProgress = std::function<void(uint64_t, uint64_t)>;

// Where each tensor of the stage lives on the device.
struct GpuStageWeights {
    DeviceMatrix token_embd;  // first stage (data null otherwise)
    std::vector<GpuLayerWeights> layers;
    const float* output_norm = nullptr;       // last stage
    DeviceMatrix output;                      // last stage (token_embd's upload when tied)
    const float* output_res_score = nullptr;  // last stage, K3 attention residuals
};

class GpuWeights : public GpuStageWeights {
public:
    // Device bytes the upload of w takes (what the memory plan counts), without uploading.
    // Throws Error(unsupported) naming a tensor whose type the GPU products cannot take.
    static uint64_t upload_bytes(const model::ModelWeights& w);
    // The widest input row and the tallest matrix among the stage's matrices (a stack's: one
    // matrix), for the product's workspaces.
    static void matrix_extents(const model::ModelWeights& w, int64_t* max_cols, int64_t* max_rows);

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
