// The runtime section: which build of strata ran, on what machine. Anything that could not be
// determined is recorded as absent with the reason, never left out or guessed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::report {

struct GpuRecord {
    std::string name;
    uint64_t memory_bytes = 0;  // 0: unknown
};

// Filled by the CUDA backend when there is one; absent otherwise (present = false + reason).
struct CudaRecord {
    bool present = false;
    std::string absent_reason = "no CUDA information supplied (no CUDA backend in this process)";
    std::string runtime_version;  // e.g. "12.4"
    std::string driver_version;   // e.g. "550.54.15"
    std::vector<GpuRecord> gpus;
};

struct Runtime {
    std::string strata_version;
    std::string git_commit;        // HEAD when the library was built (+uncommitted-changes); "unknown" without git
    std::string build_type;
    std::string compiler_id;       // CMake's id: "GNU", "Clang"
    std::string compiler_version;
    std::string cxx_flags;         // CMAKE_CXX_FLAGS plus those of the build type
    CudaRecord cuda;
    std::string cpu_model;         // /proc/cpuinfo "model name"; "unknown" when absent
    int logical_cores = 0;
    uint64_t host_memory_bytes = 0;  // MemTotal
    std::string os;                  // uname: sysname release machine
};

// This process's build and machine, CUDA absent (the CUDA backend fills it where present).
Runtime describe_runtime();

}  // namespace strata::report
