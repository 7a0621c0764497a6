// Multi-head latent attention on the GPU (deepseek2.md; exec::Context::attention_mla's order):
// the query (low-rank pair or full), the latent and rope key (normed latent, rotated key unless
// the model uses it unrotated), the f16 latent cache, each head's query moved into the latent
// space by k_b, the causal attention over the cache (mla_attention.cuh), each head's output moved
// back by v_b, K3's sigmoid output gate, the output projection.
#include <string>

#include "cuda_error.hpp"
#include "gpu_context.hpp"
#include "gpu_context_device.hpp"
#include "kernels/attention/mla_attention.cuh"
#include "kernels/ops/model_ops.cuh"
#include "kernels/ops/ops.cuh"

namespace strata::cuda {

void GpuContext::attention_mla(size_t li, int m) {
    Device& d = *d_;
    const GpuLayerWeights& L = d.w->layers[li];
    const model::MlaParams& p = hp_.mla;
    const int H = int(hp_.n_head), C = int(p.kv_lora_rank), R = int(hp_.rope.n_rot), nope = int(p.qk_nope);
    const int vd = int(p.v_head_dim), Qw = nope + R, W = C + R;
    const float eps = float(hp_.rms_eps);
    const int neox = hp_.arch.rope_order == model::RopeOrder::neox ? 1 : 0;
    cudaStream_t s = d.stream;
    DeviceMatmul& mm = *d.mm;

    if (L.wq_a.data) {
        mm.run(L.wq_a, d.a.xn, m, d.a.q_a);
        check(rms_norm(d.a.q_a, L.q_a_norm, p.q_lora_rank, m, eps, d.a.q_a, s), "rms_norm (q_a)");
        mm.run(L.wq_b, d.a.q_a, m, d.a.q);
    } else {
        mm.run(L.wq, d.a.xn, m, d.a.q);
    }
    mm.run(L.wkv_a, d.a.xn, m, d.a.ckv);
    // The latent is normed; the rope key after it is not.
    check(rms_norm_strided(d.a.ckv, W, L.kv_a_norm, C, m, eps, d.a.ckv, W, s), "rms_norm_strided (kv_a)");
    if (p.rotate && d.n_pairs > 0) {
        check(rope(d.a.ckv + C, m, 1, R, W, d.cos, d.sin, d.n_pairs, neox, d.n_past, s), "rope (k_pe)");
        check(rope(d.a.q + nope, m, H, Qw, int64_t(H) * Qw, d.cos, d.sin, d.n_pairs, neox, d.n_past, s), "rope (q_pe)");
    }
    __half* cache = d.latent + uint64_t(d.mla_slot[li]) * d.latent_layer_halves;
    check(mla_cache_store(d.a.ckv, m, W, d.n_past, cache, s), "mla_cache_store");

    // Queries into the latent space, head by head: q_abs[h] = k_b[h] q_nope[h].
    check(gather_heads(d.a.q, m, H, int64_t(H) * Qw, Qw, 0, nope, d.a.head_in, s), "gather_heads (q_nope)");
    for (int h = 0; h < H; ++h)
        mm.run(L.wk_b.mat(h), d.a.head_in + int64_t(h) * m * nope, m, d.a.q_abs + int64_t(h) * m * C);
    const MlaAttentionShape shape{.n_head = H,
                                  .kv_lora = C,
                                  .n_rot = R,
                                  .n_tokens = m,
                                  .q_stride = H * Qw,
                                  .q_head_stride = Qw,
                                  .q_pe_offset = nope,
                                  .scale = float(p.kq_scale)};
    check(mla_attention(d.a.q_abs, d.a.q, cache, d.n_past, shape, d.a.o_lat, s), "mla_attention");
    // Back out of the latent space: o[h] = v_b[h] o_lat[h], into token-major rows.
    for (int h = 0; h < H; ++h)
        mm.run(L.wv_b.mat(h), d.a.o_lat + int64_t(h) * m * C, m, d.a.head_out + int64_t(h) * m * vd);
    check(scatter_heads(d.a.head_out, m, H, vd, d.a.att, s), "scatter_heads (values)");
    if (L.attn_gate.data) {  // K3: a sigmoid gate from the normed layer input, before wo
        mm.run(L.attn_gate, d.a.xn, m, d.a.head_out);
        check(mul_sigmoid(d.a.att, d.a.head_out, size_t(m) * size_t(H) * size_t(vd), s), "mul_sigmoid (attention gate)");
    }
    mm.run(L.wo, d.a.att, m, d.a.proj);
}

}  // namespace strata::cuda
