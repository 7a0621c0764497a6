// Fused decode GEMV instantiations for the i-quants a Kimi release uses (gemv_fused.cuh):
// IQ1_M, IQ2_XXS, IQ3_XXS, IQ4_XS against Q8_K activations and IQ4_NL against Q8_0.
// UNTESTED ON A GPU (cuda/tests/test_gemv.cpp).
#include "gemv_fused.cuh"
#include "gemv_launch.cuh"

namespace strata::cuda::gemv_detail {

cudaError_t launch_fused_iq(const DeviceMatrix& w, const void* act, int n_tokens, float* y, cudaStream_t stream) {
    switch (w.type) {
    case quant::kTypeIQ1_M: return launch_fused_type<quant::kTypeIQ1_M>(w, act, n_tokens, y, stream);
    case quant::kTypeIQ2_XXS: return launch_fused_type<quant::kTypeIQ2_XXS>(w, act, n_tokens, y, stream);
    case quant::kTypeIQ3_XXS: return launch_fused_type<quant::kTypeIQ3_XXS>(w, act, n_tokens, y, stream);
    case quant::kTypeIQ4_XS: return launch_fused_type<quant::kTypeIQ4_XS>(w, act, n_tokens, y, stream);
    case quant::kTypeIQ4_NL: return launch_fused_type<quant::kTypeIQ4_NL>(w, act, n_tokens, y, stream);
    default: return cudaErrorInvalidValue;
    }
}

}  // namespace strata::cuda::gemv_detail
