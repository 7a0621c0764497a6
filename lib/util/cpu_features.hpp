// Run-time CPU feature detection: kernels compiled for AVX2 are only called when the CPU has it.
#pragma once

namespace strata::util {

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512vnni = false;  // VPDPBUSD on 512-bit registers (Ice Lake, Sapphire Rapids, Zen 4)
};

// Detected once; $STRATA_CPU=scalar forces the portable kernels and $STRATA_CPU=avx2 hides
// AVX-512 (for tests and comparisons: one machine runs the paths other CPUs take).
const CpuFeatures& cpu_features();

// AVX2, FMA and F16C together on x86-64: what every kernel compiled for AVX2 uses (so it may run).
bool has_avx2_kernels();

// AVX2 kernels plus AVX-512 F, BW, VL, DQ and VNNI: what every kernel in an *_avx512.cpp file uses.
bool has_avx512_vnni_kernels();

}  // namespace strata::util
