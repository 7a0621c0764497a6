// CUDA runtime errors as strata::Error (host code only): allocation failures are out_of_memory,
// a missing driver or device is unsupported, anything else internal, each naming the operation.
#pragma once

#include <string>

#include <cuda_runtime.h>

#include "util/error.hpp"

namespace strata::cuda {

inline void check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    const std::string msg = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    if (e == cudaErrorMemoryAllocation) fail(Status::out_of_memory, msg);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorInvalidDevice)
        fail(Status::unsupported, msg);
    fail(Status::internal, msg);
}

}  // namespace strata::cuda
