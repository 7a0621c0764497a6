// Binding the Kimi layer parts (lib/model/kimi_linear.md): KDA layers (q/k/v, their causal conv
// kernels, the decay gate, beta, the output gate and norm) and the K3 extras (MLA output gate,
// latent expert projections, attention-residual score vectors).
#include "model/binder.hpp"
#include "util/error.hpp"

namespace strata::model {

void bind_kda_attention(Binder& b, const Hparams& hp, const std::string& p, LayerWeights& L) {
    const KdaParams& k = hp.kda;
    const int64_t E = hp.n_embd, H = hp.n_head, dk = k.head_dim, D = hp.kda_width(), K = k.conv_kernel;
    L.recurrent = true;
    L.wq = b.matrix(p + "attn_q.weight", E, D);
    L.wk = b.matrix(p + "attn_k.weight", E, D);
    L.wv = b.matrix(p + "attn_v.weight", E, D);
    L.conv_q = b.flat(p + "ssm_conv1d_q.weight", D * K);
    L.conv_k = b.flat(p + "ssm_conv1d_k.weight", D * K);
    L.conv_v = b.flat(p + "ssm_conv1d_v.weight", D * K);
    L.f_a = b.matrix(p + "ssm_f_a.weight", E, dk);
    L.f_b = b.matrix(p + "ssm_f_b.weight", dk, D);
    L.dt_bias = b.flat(p + "ssm_dt.bias", D);
    L.ssm_a = b.flat(p + "ssm_a", H);
    L.w_beta = b.matrix(p + "ssm_beta.weight", E, H);
    if (k.full_rank_gate) {
        L.g_full = b.matrix(p + "ssm_g.weight", E, D);
    } else {
        L.g_a = b.matrix(p + "ssm_g_a.weight", E, dk);
        L.g_b = b.matrix(p + "ssm_g_b.weight", dk, D);
    }
    L.ssm_norm = b.vec(p + "ssm_norm.weight", dk);
    L.wo = b.matrix(p + "attn_output.weight", D, E);
}

void bind_k3_extras(Binder& b, const Hparams& hp, const std::string& p, LayerWeights& L) {
    const int64_t E = hp.n_embd;
    if (!L.recurrent && b.has(p + "attn_gate.weight")) L.attn_gate = b.matrix(p + "attn_gate.weight", E, hp.n_attn_out());
    if (L.moe && hp.moe.latent > 0) {
        L.routed_down = b.matrix(p + "ffn_routed_down.weight", E, hp.moe.latent);
        L.routed_up = b.matrix(p + "ffn_routed_up.weight", hp.moe.latent, E);
        L.routed_norm = b.vec(p + "ffn_routed_norm.weight", hp.moe.latent, /*required=*/false);
    }
    if (hp.attn_res_block > 0) {
        L.attn_res_score = b.vec(p + "attn_res_score.weight", E);
        L.ffn_res_score = b.vec(p + "ffn_res_score.weight", E);
    }
}

}  // namespace strata::model
