// What the CUDA runtime says about this process's GPUs, for the runtime section of reports
// (lib/capi/report.cpp fills report::CudaRecord from it in builds with the CUDA backend).
// Host code; plain strings so that cuda/ needs nothing from lib/report.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::cuda {

struct CudaRuntimeInfo {
    bool usable = false;
    std::string why_not;          // when !usable: the runtime's error for the device count
    std::string runtime_version;  // "13.0"; "" when unreadable
    std::string driver_version;   // the CUDA version the driver supports, "13.0"; "" when unreadable
    std::vector<std::pair<std::string, uint64_t>> gpus;  // name, global memory bytes
};

CudaRuntimeInfo describe_cuda_runtime();

}  // namespace strata::cuda
