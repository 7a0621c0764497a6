// Kimi Delta Attention on the GPU (kimi_linear.md; exec::Context::attention_kda's order): the
// projections, the low-rank decay gate and the output gate (low-rank pair or K3's full matrix),
// the causal convolutions with their windows on the device, then the gated delta rule: the step
// form (every token as a decode step would run it) or, with kda_chunk > 0 on a multi-token input,
// the chunked form between its prepare and output kernels; the output projection.
#include "cuda_error.hpp"
#include "gpu_context.hpp"
#include "gpu_context_device.hpp"
#include "kernels/kda/kda.cuh"
#include "kernels/kda/kda_chunk.cuh"

namespace strata::cuda {

void GpuContext::attention_kda(size_t li, int m) {
    Device& d = *d_;
    const GpuLayerWeights& L = d.w->layers[li];
    const int D = int(hp_.kda_width()), K = int(hp_.kda.conv_kernel);
    const int slot = d.kda_slot[li];
    cudaStream_t s = d.stream;
    DeviceMatmul& mm = *d.mm;

    mm.run(L.wq, d.a.xn, m, d.a.kq);
    mm.run(L.wk, d.a.xn, m, d.a.kk);
    mm.run(L.wv, d.a.xn, m, d.a.kv);
    mm.run(L.w_beta, d.a.xn, m, d.a.kbeta);
    mm.run(L.f_a, d.a.xn, m, d.a.klow);
    mm.run(L.f_b, d.a.klow, m, d.a.kz);
    if (L.g_full.data) {
        mm.run(L.g_full, d.a.xn, m, d.a.kgate);
    } else {
        mm.run(L.g_a, d.a.xn, m, d.a.klow);
        mm.run(L.g_b, d.a.klow, m, d.a.kgate);
    }
    check(kda_conv_silu(d.a.kq, m, D, L.conv_q, K, d.kda_conv(slot, 0), s), "kda_conv_silu (q)");
    check(kda_conv_silu(d.a.kk, m, D, L.conv_k, K, d.kda_conv(slot, 1), s), "kda_conv_silu (k)");
    check(kda_conv_silu(d.a.kv, m, D, L.conv_v, K, d.kda_conv(slot, 2), s), "kda_conv_silu (v)");

    const KdaStepShape shape{.n_head = int(hp_.n_head),
                             .head_dim = int(hp_.kda.head_dim),
                             .eps = float(hp_.rms_eps),
                             .lower_bound_gate = hp_.kda.lower_bound_gate ? 1 : 0,
                             .gate_lower_bound = float(hp_.kda.gate_lower_bound)};
    float* state = d.kda_state(slot);
    if (kda_chunk_ > 0 && m > 1) {
        check(kda_prepare(d.a.kq, d.a.kk, d.a.kz, L.dt_bias, L.ssm_a, d.a.kbeta, m, shape, d.a.kg, d.a.kb, s),
              "kda_prepare");
        const KdaChunkShape chunk{.n_head = shape.n_head, .head_dim = shape.head_dim, .n_tokens = m, .chunk = int(kda_chunk_)};
        check(kda_chunk_prefill(d.a.kq, d.a.kk, d.a.kv, d.a.kg, d.a.kb, state, d.a.ko, chunk, s), "kda_chunk_prefill");
        check(kda_gate_output(d.a.ko, d.a.kgate, L.ssm_norm, m, shape, d.a.att, s), "kda_gate_output");
    } else {
        check(kda_step_tokens(d.a.kq, d.a.kk, d.a.kv, d.a.kz, L.dt_bias, L.ssm_a, d.a.kbeta, d.a.kgate, L.ssm_norm, state,
                              d.a.att, m, shape, s),
              "kda_step_tokens");
    }
    mm.run(L.wo, d.a.att, m, d.a.proj);
}

}  // namespace strata::cuda
