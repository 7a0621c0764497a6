#include "report/runtime_info.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "report/proc_stats.hpp"
#include "strata/strata.h"

// The commit: generated at every build (cmake/StrataGitCommit.cmake). The rest: set by
// lib/CMakeLists.txt for this file only. The fallbacks keep other builds compiling.
#if __has_include("strata_git_commit.h")
#include "strata_git_commit.h"
#endif
#ifndef STRATA_GIT_COMMIT
#define STRATA_GIT_COMMIT "unknown"
#endif
#ifndef STRATA_BUILD_TYPE
#define STRATA_BUILD_TYPE "unknown"
#endif
#ifndef STRATA_COMPILER_ID
#define STRATA_COMPILER_ID "unknown"
#endif
#ifndef STRATA_COMPILER_VERSION
#define STRATA_COMPILER_VERSION "unknown"
#endif
#ifndef STRATA_CXX_FLAGS
#define STRATA_CXX_FLAGS "unknown"
#endif

#define STRATA_STR2(x) #x
#define STRATA_STR(x) STRATA_STR2(x)

namespace strata::report {

namespace {

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) break;
        auto value = line.substr(colon + 1);
        const auto first = value.find_first_not_of(" \t");
        return first == std::string::npos ? "unknown" : value.substr(first);
    }
    return "unknown";
}

}  // namespace

Runtime describe_runtime() {
    Runtime r;
    r.strata_version = STRATA_STR(STRATA_VERSION_MAJOR) "." STRATA_STR(STRATA_VERSION_MINOR) "." STRATA_STR(
        STRATA_VERSION_PATCH);
    r.git_commit = STRATA_GIT_COMMIT;
    r.build_type = STRATA_BUILD_TYPE;
    r.compiler_id = STRATA_COMPILER_ID;
    r.compiler_version = STRATA_COMPILER_VERSION;
    r.cxx_flags = STRATA_CXX_FLAGS;
    r.cpu_model = cpu_model_name();
    r.logical_cores = int(std::thread::hardware_concurrency());
    if (auto mem = read_host_memory()) r.host_memory_bytes = mem->total_bytes;
    struct utsname u {};
    if (uname(&u) == 0) r.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
    return r;
}

}  // namespace strata::report
