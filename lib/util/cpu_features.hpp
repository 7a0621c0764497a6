// Run-time CPU feature detection: kernels compiled for AVX2 are only called when the CPU has it.
#pragma once

namespace strata::util {

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
};

// Detected once; $STRATA_CPU=scalar forces the portable kernels (for tests and comparisons).
const CpuFeatures& cpu_features();

// AVX2, FMA and F16C together on x86-64: what every kernel compiled for AVX2 uses (so it may run).
bool has_avx2_kernels();

}  // namespace strata::util
