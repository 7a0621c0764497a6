#include "gemm_tokens.hpp"

#include "quant/type_ids.hpp"
#include "util/cpu_features.hpp"

namespace strata::quant {

namespace {

#if defined(__x86_64__)
MultiDot avx2_kernel(uint32_t type) {
    switch (type) {
        case kTypeQ8_0: return {multi_dot_q8_0_avx2, kLegacyMultiRows, kLegacyMultiTokens};
        case kTypeQ4_0: return {multi_dot_q4_0_avx2, kLegacyMultiRows, kLegacyMultiTokens};
        case kTypeQ4_1: return {multi_dot_q4_1_avx2, kLegacyMultiRows, kLegacyMultiTokens};
        case kTypeQ5_0: return {multi_dot_q5_0_avx2, kLegacyMultiRows, kLegacyMultiTokens};
        case kTypeQ5_1: return {multi_dot_q5_1_avx2, kLegacyMultiRows, kLegacyMultiTokens};
        case kTypeQ4_K: return {multi_dot_q4_K_avx2, kKQuantMultiRows, kKQuantMultiTokens};
        case kTypeQ5_K: return {multi_dot_q5_K_avx2, kKQuantMultiRows, kKQuantMultiTokens};
        case kTypeQ6_K: return {multi_dot_q6_K_avx2, kKQuantMultiRows, kKQuantMultiTokens};
        case kTypeIQ4_XS: return {multi_dot_iq4_xs_avx2, kIq4MultiRows, kIq4MultiTokens};
        default: return {};
    }
}

MultiDot avx512_kernel(uint32_t type) {
    switch (type) {
        case kTypeQ8_0: return {multi_dot_q8_0_avx512, kLegacyMulti512Rows, kLegacyMulti512Tokens};
        case kTypeQ4_0: return {multi_dot_q4_0_avx512, kLegacyMulti512Rows, kLegacyMulti512Tokens};
        case kTypeQ4_1: return {multi_dot_q4_1_avx512, kLegacyMulti512Rows, kLegacyMulti512Tokens};
        case kTypeQ5_0: return {multi_dot_q5_0_avx512, kLegacyMulti512Rows, kLegacyMulti512Tokens};
        case kTypeQ5_1: return {multi_dot_q5_1_avx512, kLegacyMulti512Rows, kLegacyMulti512Tokens};
        case kTypeQ4_K: return {multi_dot_q4_K_avx512, kKQuantMulti512Rows, kKQuantMulti512Tokens};
        case kTypeQ5_K: return {multi_dot_q5_K_avx512, kKQuantMulti512Rows, kKQuantMulti512Tokens};
        case kTypeQ6_K: return {multi_dot_q6_K_avx512, kKQuantMulti512Rows, kKQuantMulti512Tokens};
        case kTypeIQ4_XS: return {multi_dot_iq4_xs_avx512, kIq4Multi512Rows, kIq4Multi512Tokens};
        default: return {};
    }
}
#endif

}  // namespace

MultiDot find_multi_dot(const TypeTraits& traits, bool scalar, MultiDotIsa isa) {
#if defined(__x86_64__)
    // Only where best_vec_dot picks the AVX2 kernel: these equal that kernel, not the scalar one.
    if (!traits.dot_avx2 || best_vec_dot(traits, scalar) != traits.dot_avx2) return {};
    static const bool avx512 = util::has_avx512_vnni_kernels();
    if (isa == MultiDotIsa::avx512 || (isa == MultiDotIsa::best && avx512)) return avx512 ? avx512_kernel(traits.id) : MultiDot{};
    return avx2_kernel(traits.id);
#else
    (void)traits;
    (void)scalar;
    (void)isa;
    return {};
#endif
}

}  // namespace strata::quant
