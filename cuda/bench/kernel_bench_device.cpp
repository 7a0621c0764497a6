// UNTESTED ON A GPU until a device check has run it.
#include "kernel_bench_device.hpp"

#include <string>

#include <cuda_runtime.h>

#include "runtime/cublas_loader.hpp"

namespace strata::cuda {

namespace {

using json = nlohmann::ordered_json;

json attribute(cudaDeviceAttr a, int device) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, a, device) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    return v;
}

// 13000 -> "13.0"
std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

json kernel_bench_device_json(int device) {
    json d = json::object();
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, device) == cudaSuccess) {
        d["name"] = std::string(p.name);
        d["compute_capability"] = std::to_string(p.major) + "." + std::to_string(p.minor);
        d["multiprocessors"] = p.multiProcessorCount;
        d["global_memory_bytes"] = uint64_t(p.totalGlobalMem);
        d["l2_cache_bytes"] = p.l2CacheSize;
        d["memory_bus_width_bits"] = p.memoryBusWidth;
    } else {
        cudaGetLastError();
        d["name"] = nullptr;
    }
    d["index"] = device;
    d["sm_clock_peak_khz"] = attribute(cudaDevAttrClockRate, device);
    d["memory_clock_peak_khz"] = attribute(cudaDevAttrMemoryClockRate, device);
    d["ecc_enabled"] = attribute(cudaDevAttrEccEnabled, device);
    d["clocks_note"] = "peak clocks from device attributes; current clocks are not readable without NVML";
    const json mem = d["memory_clock_peak_khz"];
    if (mem.is_number() && d.contains("memory_bus_width_bits"))
        d["nominal_peak_gb_per_s"] =
            2.0 * mem.get<double>() * 1e3 * d["memory_bus_width_bits"].get<double>() / 8.0 / 1e9;
    else
        d["nominal_peak_gb_per_s"] = nullptr;
    d["nominal_peak_note"] = "2 x peak memory clock x bus width / 8 (nominal, from attributes; not a measurement)";

    int runtime = 0, driver = 0;
    d["cuda_runtime_version"] = cudaRuntimeGetVersion(&runtime) == cudaSuccess ? json(version_text(runtime)) : json(nullptr);
    d["cuda_driver_version"] = cudaDriverGetVersion(&driver) == cudaSuccess ? json(version_text(driver)) : json(nullptr);
    std::string why;
    if (Cublas* c = Cublas::get(&why)) {
        d["cublas_version"] = c->version();
        d["cublas_absent_reason"] = nullptr;
    } else {
        d["cublas_version"] = nullptr;
        d["cublas_absent_reason"] = why;
    }
    return d;
}

}  // namespace strata::cuda
