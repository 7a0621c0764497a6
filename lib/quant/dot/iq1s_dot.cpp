// Run-time choice between the IQ1_S x Q8_K kernels.
#include "iq1s_dot.hpp"

#include "util/cpu_features.hpp"
#include "util/error.hpp"

namespace strata::quant {

Iq1sKernel resolve_iq1s_kernel(Iq1sKernel kernel) {
    switch (kernel) {
        case Iq1sKernel::scalar: return Iq1sKernel::scalar;
        case Iq1sKernel::avx2:
            if (!util::has_avx2_kernels())
                fail(Status::unsupported, "IQ1_S kernel avx2 requested but the CPU (or STRATA_CPU) does not allow it");
            return Iq1sKernel::avx2;
        case Iq1sKernel::simd:
            if (!util::has_avx2_kernels())
                fail(Status::unsupported, "IQ1_S kernel simd requested but the CPU (or STRATA_CPU) does not allow AVX2");
            return Iq1sKernel::simd;
        case Iq1sKernel::best: break;
    }
    return util::has_avx2_kernels() ? Iq1sKernel::simd : Iq1sKernel::scalar;
}

const char* iq1s_kernel_name(Iq1sKernel kernel) {
    switch (kernel) {
        case Iq1sKernel::best: return "best";
        case Iq1sKernel::scalar: return "scalar";
        case Iq1sKernel::avx2: return "avx2";
        case Iq1sKernel::simd: return "simd";
    }
    return "?";
}

float vec_dot_iq1s_q8k(int64_t n, const void* x, const void* y, Iq1sKernel kernel) {
    if (n <= 0 || n % kQK_K != 0) fail(Status::invalid_argument, "IQ1_S dot: n must be a positive multiple of 256");
    if (!x || !y) fail(Status::invalid_argument, "IQ1_S dot: null operand");
    const auto* xb = static_cast<const block_iq1_s*>(x);
    const auto* yb = static_cast<const block_q8_K*>(y);
#if defined(__x86_64__)
    switch (resolve_iq1s_kernel(kernel)) {
        case Iq1sKernel::avx2: return vec_dot_iq1s_q8k_avx2(n, xb, yb);
        case Iq1sKernel::simd: return vec_dot_iq1s_q8k_simd(n, xb, yb);
        default: break;
    }
#else
    resolve_iq1s_kernel(kernel);
#endif
    return vec_dot_iq1s_q8k_scalar(n, xb, yb);
}

}  // namespace strata::quant
