// The CUDA backend's product y = W x for any token count (host code): gemv (gemv.cuh) up to
// kGemvMaxTokens rows, otherwise the faster of the tensor-core kernel (gemm_mma, any quantized
// type) and dequantize-to-f16 + cuBLAS for that shape, measured the first time it is seen
// (exec::MatmulChooser). Owns the workspaces: quantized activations, f16 activations and an f16
// weight panel, sized at creation.
// Usable inside CUDA graph capture for n_tokens <= kGemvMaxTokens (no allocation, no sync).
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemm.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime.h>

#include "device_matrix.hpp"
#include "exec/matmul_choice.hpp"

namespace strata::cuda {

class Cublas;

struct MatmulLimits {
    int64_t max_cols = 0;    // the widest input row of any matrix it will see
    int64_t max_rows = 0;    // the tallest matrix
    int64_t max_tokens = 0;  // the largest micro-batch
};

class DeviceMatmul {
public:
    DeviceMatmul(const MatmulLimits& limits, cudaStream_t stream);
    ~DeviceMatmul();
    DeviceMatmul(const DeviceMatmul&) = delete;
    DeviceMatmul& operator=(const DeviceMatmul&) = delete;

    // Device bytes the workspaces of these limits take (for the memory plan).
    static uint64_t workspace_bytes(const MatmulLimits& limits);

    // y [n_tokens][w.rows] = W x, x [n_tokens][w.cols], all device pointers; throws Error on a
    // CUDA failure or a shape beyond the limits.
    void run(const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y);

    // Whether cuBLAS could be loaded (why not, otherwise): without it prefill sizes run the MMA
    // path, or (float types, rows of partial 64-column chunks) gemv eight tokens at a time.
    bool has_cublas(std::string* why = nullptr) const;
    const exec::MatmulChooser& chooser() const { return chooser_; }

private:
    MatmulLimits limits_;
    cudaStream_t stream_;
    exec::MatmulChooser chooser_;
    Cublas* cublas_ = nullptr;  // process-wide, loaded on first use (cublas_loader.hpp)
    std::string cublas_why_;
    void* act_ = nullptr;       // quantized activations (gemv)
    void* x16_ = nullptr;       // f16 activations (mma, cublas)
    void* panel_ = nullptr;     // f16 weight panel (cublas)
    int64_t panel_rows_ = 0;
};

}  // namespace strata::cuda
