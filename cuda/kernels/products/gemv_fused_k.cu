// Fused decode GEMV instantiations for the K-quants a Kimi release uses (gemv_fused.cuh):
// Q4_K, Q5_K, Q6_K against Q8_K activations. UNTESTED ON A GPU (cuda/tests/test_gemv.cpp).
#include "gemv_fused.cuh"
#include "gemv_launch.cuh"

namespace strata::cuda::gemv_detail {

cudaError_t launch_fused_k(const DeviceMatrix& w, const void* act, int n_tokens, float* y, cudaStream_t stream) {
    switch (w.type) {
    case quant::kTypeQ4_K: return launch_fused_type<quant::kTypeQ4_K>(w, act, n_tokens, y, stream);
    case quant::kTypeQ5_K: return launch_fused_type<quant::kTypeQ5_K>(w, act, n_tokens, y, stream);
    case quant::kTypeQ6_K: return launch_fused_type<quant::kTypeQ6_K>(w, act, n_tokens, y, stream);
    default: return cudaErrorInvalidValue;
    }
}

}  // namespace strata::cuda::gemv_detail
