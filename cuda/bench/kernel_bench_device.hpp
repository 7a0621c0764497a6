// The device section of the kernel benchmark JSON: what ran the kernels. Host code.
// UNTESTED ON A GPU until a device check has run it.
#pragma once

#include <nlohmann/json.hpp>

namespace strata::cuda {

// Name, compute capability, SM count, L2 and global memory size, peak SM and memory clocks and
// the bus width (device attributes; the current clocks are not readable without NVML), the
// nominal peak bandwidth they imply, ECC, the CUDA runtime and driver versions, and the cuBLAS
// version (or why cuBLAS could not be loaded). A value that could not be read is null.
nlohmann::ordered_json kernel_bench_device_json(int device);

}  // namespace strata::cuda
