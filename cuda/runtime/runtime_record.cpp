#include "runtime_record.hpp"

#include <cuda_runtime.h>

namespace strata::cuda {

namespace {

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

CudaRuntimeInfo describe_cuda_runtime() {
    CudaRuntimeInfo info;
    int v = 0;
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) info.runtime_version = version_text(v);
    if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) info.driver_version = version_text(v);
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        cudaGetLastError();
        info.why_not = e != cudaSuccess ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)
                                        : "the CUDA runtime reports no devices";
        return info;
    }
    info.usable = true;
    for (int d = 0; d < n; ++d) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, d) == cudaSuccess) info.gpus.emplace_back(p.name, uint64_t(p.totalGlobalMem));
        else cudaGetLastError();
    }
    return info;
}

}  // namespace strata::cuda
