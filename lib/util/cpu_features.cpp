#include "util/cpu_features.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace strata::util {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// CPUID bits (Intel SDM vol. 2A, CPUID): read directly because __builtin_cpu_supports does not
// know every feature name on every compiler (clang 14 lacks "f16c").
CpuFeatures detect() {
    CpuFeatures f;
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
    const bool osxsave = ecx & (1u << 27);
    const bool avx = ecx & (1u << 28);
    if (!osxsave || !avx) return f;
    // The OS must save the YMM (and for AVX-512 the ZMM/opmask) state across context switches.
    uint32_t xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    const bool ymm = (xcr0_lo & 0x6u) == 0x6u;
    const bool zmm = (xcr0_lo & 0xe6u) == 0xe6u;
    if (!ymm) return f;
    f.fma = ecx & (1u << 12);
    f.f16c = ecx & (1u << 29);
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
        f.avx2 = ebx & (1u << 5);
        f.avx512f = zmm && (ebx & (1u << 16));
        f.avx512dq = zmm && (ebx & (1u << 17));
        f.avx512bw = zmm && (ebx & (1u << 30));
        f.avx512vl = zmm && (ebx & (1u << 31));
        f.avx512vnni = zmm && (ecx & (1u << 11));
    }
    return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = [] {
        const char* force = std::getenv("STRATA_CPU");
        if (force && std::strcmp(force, "scalar") == 0) return CpuFeatures{};
        CpuFeatures f = detect();
        // "avx2" hides AVX-512, so one machine can run the paths an AVX2-only CPU takes.
        if (force && std::strcmp(force, "avx2") == 0) {
            f.avx512f = f.avx512dq = f.avx512bw = f.avx512vl = f.avx512vnni = false;
        }
        return f;
    }();
    return features;
}

bool has_avx2_kernels() {
#if defined(__x86_64__)
    const auto& f = cpu_features();
    return f.avx2 && f.fma && f.f16c;
#else
    return false;
#endif
}

bool has_avx512_vnni_kernels() {
#if defined(__x86_64__)
    const auto& f = cpu_features();
    return has_avx2_kernels() && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni;
#else
    return false;
#endif
}

}  // namespace strata::util
