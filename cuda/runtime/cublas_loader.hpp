// cuBLAS loaded at run time (dlopen of libcublas.so.13, then libcublas.so), so that libstrata
// links no cuBLAS and loads on machines without one; without it the backend runs its own kernels.
//
// UNTESTED ON A GPU until a device check has run it.
#pragma once

#include <string>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace strata::cuda {

class Cublas {
public:
    // The process-wide instance, or null with the reason in *why (library or symbol missing,
    // handle creation failed).
    static Cublas* get(std::string* why);

    // y [n][m] (row-major, f32) = x [n][k] (f16, row-major) times W^T for W [m][k] (f16,
    // row-major): cublasGemmEx with f32 accumulation on `stream`. ldy: the row stride of y.
    cudaError_t gemm_f16(const __half* w, const __half* x, int m, int n, int k, float* y, int ldy,
                         cudaStream_t stream);

    // The library's version (e.g. 130000), for reports.
    int version() const { return version_; }

private:
    Cublas() = default;
    void* lib_ = nullptr;
    void* handle_ = nullptr;
    int version_ = 0;
    void* create_ = nullptr;
    void* set_stream_ = nullptr;
    void* gemm_ex_ = nullptr;
};

}  // namespace strata::cuda
