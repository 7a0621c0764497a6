// cuBLAS through dlopen (cublas_loader.hpp). <cublas_v2.h> is included for its types and enums
// only: every function is called through a pointer resolved here, so libstrata links no cuBLAS.
// UNTESTED ON A GPU.
#include "cublas_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include <cublas_v2.h>

namespace strata::cuda {
namespace {

using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using GetVersionFn = cublasStatus_t (*)(cublasHandle_t, int*);
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                    const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

// Where to look: the loader path first, then the toolkit's own directory, which the GPU machines
// may not have on it (libcublas.so.13 finds its libcublasLt.so.13 there through RUNPATH $ORIGIN).
std::vector<std::string> library_candidates() {
    std::vector<std::string> names = {"libcublas.so.13", "libcublas.so"};
    if (const char* home = std::getenv("CUDA_HOME"); home && *home)
        names.push_back(std::string(home) + "/lib64/libcublas.so.13");
    names.push_back("/usr/local/cuda/lib64/libcublas.so.13");
    return names;
}

cudaError_t to_cuda_error(cublasStatus_t s) {
    switch (s) {
        case CUBLAS_STATUS_SUCCESS: return cudaSuccess;
        case CUBLAS_STATUS_INVALID_VALUE: return cudaErrorInvalidValue;
        case CUBLAS_STATUS_ALLOC_FAILED: return cudaErrorMemoryAllocation;
        case CUBLAS_STATUS_NOT_SUPPORTED:
        case CUBLAS_STATUS_ARCH_MISMATCH: return cudaErrorNotSupported;
        case CUBLAS_STATUS_NOT_INITIALIZED: return cudaErrorInitializationError;
        case CUBLAS_STATUS_EXECUTION_FAILED: return cudaErrorLaunchFailure;
        default: return cudaErrorUnknown;
    }
}

std::string status_text(cublasStatus_t s) {
    switch (s) {
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED (no usable GPU or driver?)";
        case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        default: return "status " + std::to_string(int(s));
    }
}

struct Loaded {
    Cublas* cublas = nullptr;  // never destroyed: a handle torn down after the CUDA runtime at exit crashes
    std::string why;
};

std::mutex gemm_mutex;  // one handle for the process: its stream binding and the call go together

}  // namespace

Cublas* Cublas::get(std::string* why) {
    static const Loaded loaded = []() -> Loaded {
        std::string tried;
        void* lib = nullptr;
        for (const std::string& name : library_candidates()) {
            lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (lib) break;
            const char* err = dlerror();
            tried += (tried.empty() ? "" : "; ") + (err ? std::string(err) : name + ": not found");
        }
        if (!lib) return {nullptr, "cuBLAS not loaded: " + tried};

        const char* const symbols[] = {"cublasCreate_v2", "cublasSetStream_v2", "cublasGemmEx", "cublasGetVersion_v2",
                                       "cublasDestroy_v2"};
        void* fn[5] = {};
        for (int i = 0; i < 5; ++i) {
            fn[i] = dlsym(lib, symbols[i]);
            if (!fn[i]) {
                dlclose(lib);
                return {nullptr, std::string("cuBLAS has no ") + symbols[i]};
            }
        }
        cublasHandle_t handle = nullptr;
        if (const cublasStatus_t s = reinterpret_cast<CreateFn>(fn[0])(&handle); s != CUBLAS_STATUS_SUCCESS) {
            // The library stays loaded: cuBLAS may have started threads or registered with the driver.
            return {nullptr, "cublasCreate failed: " + status_text(s)};
        }
        int version = 0;
        if (const cublasStatus_t s = reinterpret_cast<GetVersionFn>(fn[3])(handle, &version);
            s != CUBLAS_STATUS_SUCCESS) {
            reinterpret_cast<DestroyFn>(fn[4])(handle);
            return {nullptr, "cublasGetVersion failed: " + status_text(s)};
        }
        auto* c = new Cublas();
        c->lib_ = lib;
        c->handle_ = handle;
        c->version_ = version;
        c->create_ = fn[0];
        c->set_stream_ = fn[1];
        c->gemm_ex_ = fn[2];
        return {c, ""};
    }();
    if (!loaded.cublas && why) *why = loaded.why;
    return loaded.cublas;
}

// Row-major y [n][m] = x [n][k] W^T as a column-major GEMM. cuBLAS reads a row-major R [a][b]
// (row stride b) as the column-major matrix R^T (b x a, leading dimension b). So:
//   y [n][m] row-major, row stride ldy      = column-major C = y^T  (m x n, ldc = ldy)
//   W [m][k] row-major                      = column-major W^T (k x m, lda = k): op(A) = T gives W (m x k)
//   x [n][k] row-major                      = column-major x^T (k x n, ldb = k): op(B) = N keeps x^T (k x n)
// and C = op(A) op(B) = W x^T = (x W^T)^T = y^T: cublasGemmEx(T, N, m, n, k, W, k, x, k, y, ldy), the
// "TN" form tensor-core kernels prefer. Inputs f16, output f32, accumulation CUBLAS_COMPUTE_32F.
cudaError_t Cublas::gemm_f16(const __half* w, const __half* x, int m, int n, int k, float* y, int ldy,
                             cudaStream_t stream) {
    if (m < 1 || n < 1 || k < 1 || ldy < m || !w || !x || !y) return cudaErrorInvalidValue;
    const float alpha = 1.0f, beta = 0.0f;
    const auto handle = static_cast<cublasHandle_t>(handle_);
    std::lock_guard<std::mutex> lock(gemm_mutex);
    if (const cublasStatus_t s = reinterpret_cast<SetStreamFn>(set_stream_)(handle, stream); s != CUBLAS_STATUS_SUCCESS)
        return to_cuda_error(s);
    return to_cuda_error(reinterpret_cast<GemmExFn>(gemm_ex_)(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w,
                                                              CUDA_R_16F, k, x, CUDA_R_16F, k, &beta, y, CUDA_R_32F,
                                                              ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace strata::cuda
