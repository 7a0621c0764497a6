#include "util/cpu_features.hpp"

#include <cstdlib>
#include <cstring>

namespace strata::util {

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = [] {
        CpuFeatures f;
        const char* force = std::getenv("STRATA_CPU");
        if (force && std::strcmp(force, "scalar") == 0) return f;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        f.avx2 = __builtin_cpu_supports("avx2");
        f.fma = __builtin_cpu_supports("fma");
        f.f16c = __builtin_cpu_supports("f16c");
        f.avx512f = __builtin_cpu_supports("avx512f");
#endif
        return f;
    }();
    return features;
}

}  // namespace strata::util
