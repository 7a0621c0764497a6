// The MoE FFN block on the GPU (deepseek2.md "MoE"; exec::Context::ffn_moe): the router scores
// the full-width normed input; K3's latent experts first map it to the latent width. Then either
//   on the device (one token, IQ1_S experts): routing by route_token in a kernel, the input
//   quantized to Q8_K once, every chosen expert's gate and up rows in one launch, the activated
//   rows quantized to Q8_K, and the weighted down rows in another launch (the experts' 50-byte
//   blocks read directly, no host round trip: the step can be captured as a graph). These are
//   the CPU's products bit for bit (moe.cuh: its Q8_K activations, integers and float steps, and
//   its sum over a token's experts in ascending expert order); or
//   on the host (several tokens, or other expert types): the router logits copied back, routed
//   by the CPU's own MoeRouter, the (token, slot) pairs grouped by expert so that each chosen
//   expert's weights are read once for all its tokens, per-expert products, and a combine that
//   sums each token's experts in ascending expert order as the CPU does.
// Then K3's latent norm and up projection, and the shared experts added.
#include <cstring>
#include <vector>

#include "cuda_error.hpp"
#include "exec/moe/expert_groups.hpp"
#include "exec/moe/moe_router.hpp"
#include "kernels/products/gemv.cuh"
#include "gpu_context.hpp"
#include "gpu_context_device.hpp"
#include "kernels/ops/model_ops.cuh"
#include "kernels/moe/moe.cuh"
#include "kernels/ops/ops.cuh"
#include "quant/type_ids.hpp"

namespace strata::cuda {

namespace {

Iq1sStack iq1s_stack(const DeviceStack& s) {
    return Iq1sStack{.data = s.first.data, .cols = s.first.cols, .rows = s.first.rows, .n_expert = s.n_mats};
}

}  // namespace

void GpuContext::ffn_moe(size_t li, int m) {
    Device& d = *d_;
    const GpuLayerWeights& L = d.w->layers[li];
    const model::MoeParams& e = hp_.moe;
    const int64_t E = hp_.n_embd, Le = e.latent > 0 ? e.latent : E;
    cudaStream_t s = d.stream;

    d.mm->run(L.gate_inp, d.a.xn, m, d.a.router);  // the router scores the full width
    const float* in = d.a.xn;
    if (e.latent > 0) {
        d.mm->run(L.routed_down, d.a.xn, m, d.a.zlat);
        in = d.a.zlat;
    }
    if (m == 1 && d.device_routing) ffn_moe_device(li, in);
    else ffn_moe_host(li, m, in);

    float* routed = d.a.moe_out;
    if (e.latent > 0) {  // back to full width, through the optional latent norm
        if (L.routed_norm) check(rms_norm(routed, L.routed_norm, Le, m, float(hp_.rms_eps), routed, s), "rms_norm (latent)");
        d.mm->run(L.routed_up, routed, m, d.a.moe_up);
        routed = d.a.moe_up;
    }
    if (L.gate_shexp.data) {
        ffn_dense(L.gate_shexp, L.up_shexp, L.down_shexp, m, d.a.proj);
        check(add_inplace(d.a.proj, routed, size_t(m) * size_t(E), s), "add_inplace (shared + routed)");
    } else {
        check(cudaMemcpyAsync(d.a.proj, routed, size_t(m) * size_t(E) * sizeof(float), cudaMemcpyDeviceToDevice, s),
              "copying the routed output");
    }
}

// One token, IQ1_S experts: d.a.router -> d.a.moe_out (Le values), through d.route_ws and the
// Q8_K buffers d.moe_act_in (Le values) and d.moe_act_h (K rows of F values).
void GpuContext::ffn_moe_device(size_t li, const float* in) {
    Device& d = *d_;
    const GpuLayerWeights& L = d.w->layers[li];
    const model::MoeParams& e = hp_.moe;
    const int K = int(e.n_expert_used);
    const int64_t Le = e.latent > 0 ? e.latent : hp_.n_embd, F = e.n_ff_exp;
    cudaStream_t s = d.stream;
    check(moe_route(d.a.router, L.exp_probs_b, exec::moe_route_of(e), 1, d.route_ws, d.ints, d.a.chosen_w, nullptr, s),
          "moe_route");
    // The CPU quantizes each expert's copy of the input row: the same Q8_K blocks, made once here.
    check(quantize_activations(quant::kTypeIQ1_S, in, Le, 1, d.moe_act_in, s), "quantize_activations (expert input)");
    check(moe_gate_up_iq1s(iq1s_stack(L.gate_exps), iq1s_stack(L.up_exps), d.moe_act_in, d.ints, K, d.moe_order, d.a.ge,
                           d.a.ue, s),
          "moe_gate_up_iq1s");
    check(ffn_activate(d.a.ge, d.a.ue, size_t(K) * size_t(F), float(e.situ_beta), float(e.situ_linear_beta), s),
          "ffn_activate (experts)");
    check(quantize_activations(quant::kTypeIQ1_S, d.a.ge, F, K, d.moe_act_h, s), "quantize_activations (expert rows)");
    check(moe_down_iq1s(iq1s_stack(L.down_exps), d.moe_act_h, d.ints, d.a.chosen_w, K, d.moe_order, d.a.moe_out, s),
          "moe_down_iq1s");
}

// m tokens, any expert type: d.a.router -> d.a.moe_out ([m][Le]), routed on the host.
void GpuContext::ffn_moe_host(size_t li, int m, const float* in) {
    Device& d = *d_;
    const GpuLayerWeights& L = d.w->layers[li];
    const model::MoeParams& e = hp_.moe;
    const int64_t K = e.n_expert_used, NE = e.n_expert, F = e.n_ff_exp;
    const int64_t Le = e.latent > 0 ? e.latent : hp_.n_embd;
    const int64_t n_rows = int64_t(m) * K;
    cudaStream_t s = d.stream;

    check(cudaMemcpyAsync(d.h_router, d.a.router, size_t(m * NE) * sizeof(float), cudaMemcpyDeviceToHost, s),
          "copying router logits from the device");
    check(cudaStreamSynchronize(s), "running the forward pass on the GPU (router)");
    const std::vector<float>& bias = d.host_bias[li];
    std::vector<int32_t> chosen(static_cast<size_t>(n_rows));
    std::vector<float> weights(static_cast<size_t>(n_rows));
    for (int t = 0; t < m; ++t)
        d.router->route(d.h_router + t * NE, bias.empty() ? nullptr : bias.data(), chosen.data() + t * K,
                        weights.data() + t * K);

    // Rows grouped by expert, and each token's rows in ascending expert order (expert_groups.hpp).
    exec::ExpertGroups& g = d.groups;
    g.build(chosen.data(), weights.data(), m, K, NE);
    std::memcpy(d.h_ints, g.src_token.data(), size_t(n_rows) * sizeof(int32_t));
    std::memcpy(d.h_ints + n_rows, g.sum_rows.data(), size_t(n_rows) * sizeof(int32_t));
    std::memcpy(d.h_w, g.sum_weights.data(), size_t(n_rows) * sizeof(float));
    int32_t* d_src_token = d.ints;
    int32_t* d_combine_rows = d.ints + n_rows;
    check(cudaMemcpyAsync(d.ints, d.h_ints, size_t(2 * n_rows) * sizeof(int32_t), cudaMemcpyHostToDevice, s),
          "copying expert rows to the device");
    check(cudaMemcpyAsync(d.a.chosen_w, d.h_w, size_t(n_rows) * sizeof(float), cudaMemcpyHostToDevice, s),
          "copying expert weights to the device");

    check(gather_rows(in, d_src_token, int(n_rows), Le, d.a.xe, s), "gather_rows (expert inputs)");
    for (int64_t x = 0; x < NE; ++x) {
        const int64_t r0 = g.first[size_t(x)], rows = g.rows(x);
        if (rows == 0) continue;
        d.mm->run(L.gate_exps.mat(x), d.a.xe + r0 * Le, rows, d.a.ge + r0 * F);
        d.mm->run(L.up_exps.mat(x), d.a.xe + r0 * Le, rows, d.a.ue + r0 * F);
    }
    check(ffn_activate(d.a.ge, d.a.ue, size_t(n_rows) * size_t(F), float(e.situ_beta), float(e.situ_linear_beta), s),
          "ffn_activate (experts)");
    for (int64_t x = 0; x < NE; ++x) {
        const int64_t r0 = g.first[size_t(x)], rows = g.rows(x);
        if (rows == 0) continue;
        d.mm->run(L.down_exps.mat(x), d.a.ge + r0 * F, rows, d.a.de + r0 * Le);
    }
    check(moe_combine(d.a.de, d_combine_rows, d.a.chosen_w, m, int(K), Le, d.a.moe_out, s), "moe_combine");
    // (The pinned rows and weights are next written after the next layer's synchronize, which
    // the copies above precede on the stream: no synchronize needed here.)
}

}  // namespace strata::cuda
