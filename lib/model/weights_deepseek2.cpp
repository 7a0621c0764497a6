// Binding the deepseek2 layer parts (lib/model/deepseek2.md): MLA attention in the MLA form
// (attn_k_b / attn_v_b) or the legacy form (attn_kv_b, from which k_b is built at load and v_b
// viewed in place), and the MoE FFN with its router, optional score bias and shared experts.
#include <cstring>

#include "gguf/model_file.hpp"

#include "model/binder.hpp"
#include "quant/formats.hpp"
#include "util/error.hpp"

namespace strata::model {

namespace {

uint64_t legacy_k_b_bytes(const Hparams& hp) {
    return uint64_t(hp.n_head) * uint64_t(hp.mla.kv_lora_rank) * uint64_t(hp.mla.qk_nope) * sizeof(float);
}

// The MLA form (attn_k_b / attn_v_b) is bound whenever one of its tensors is present.
bool mla_form(const gguf::ModelFile& file, const std::string& p) {
    return file.find_tensor(p + "attn_k_b.weight") || file.find_tensor(p + "attn_v_b.weight");
}

// Legacy form: per head h, kv_b rows h*(nope+v) .. +nope are k_b[h] transposed, the next v rows
// are v_b[h]. k_b is built once as float32 [H][C][nope] (exact whatever kv_b's type; Kimi K2
// shapes: 16.8 MB a layer, counted as owned weight bytes in the memory plan); v_b is a strided
// view of kv_b.
void bind_legacy_kv_b(Binder& b, const Hparams& hp, const std::string& p, LayerWeights& L, uint64_t& owned_bytes) {
    const int64_t H = hp.n_head, C = hp.mla.kv_lora_rank, nope = hp.mla.qk_nope, vd = hp.mla.v_head_dim;
    const WeightView kv_b = b.matrix(p + "attn_kv_b.weight", C, H * (nope + vd));
    const std::vector<float> rows = b.rows_f32(kv_b);  // [H*(nope+vd)][C]
    std::vector<float> kb(size_t(H * C * nope));
    for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < nope; ++d) {
            const float* src = rows.data() + (h * (nope + vd) + d) * C;
            for (int64_t c = 0; c < C; ++c) kb[size_t((h * C + c) * nope + d)] = src[c];
        }
    L.k_b_owned.resize(legacy_k_b_bytes(hp));
    std::memcpy(L.k_b_owned.data(), kb.data(), L.k_b_owned.size());
    owned_bytes += L.k_b_owned.size();

    L.wk_b.name = p + "attn_k_b (built from attn_kv_b)";
    L.wk_b.type = quant::kTypeF32;
    L.wk_b.cols = nope;
    L.wk_b.rows = C;
    L.wk_b.row_bytes = uint64_t(nope) * sizeof(float);
    L.wk_b.data = L.k_b_owned.data();
    L.wk_b.nbytes = L.k_b_owned.size();
    L.wk_b.n_mats = H;
    L.wk_b.mat_stride = uint64_t(C) * L.wk_b.row_bytes;

    L.wv_b = kv_b;
    L.wv_b.name = p + "attn_kv_b.weight (value rows)";
    L.wv_b.rows = vd;
    L.wv_b.data = kv_b.data + uint64_t(nope) * kv_b.row_bytes;
    L.wv_b.nbytes = uint64_t(vd) * kv_b.row_bytes;
    L.wv_b.n_mats = H;
    L.wv_b.mat_stride = uint64_t(nope + vd) * kv_b.row_bytes;
}

}  // namespace

void bind_mla_attention(Binder& b, const Hparams& hp, const std::string& p, LayerWeights& L, uint64_t& owned_bytes) {
    const MlaParams& m = hp.mla;
    const int64_t E = hp.n_embd, H = hp.n_head, C = m.kv_lora_rank, R = hp.rope.n_rot;
    if (m.q_lora_rank > 0) {
        L.wq_a = b.matrix(p + "attn_q_a.weight", E, m.q_lora_rank);
        L.q_a_norm = b.vec(p + "attn_q_a_norm.weight", m.q_lora_rank);
        L.wq_b = b.matrix(p + "attn_q_b.weight", m.q_lora_rank, hp.n_q());
    } else {
        L.wq = b.matrix(p + "attn_q.weight", E, hp.n_q());
    }
    L.wkv_a = b.matrix(p + "attn_kv_a_mqa.weight", E, C + R);
    L.kv_a_norm = b.vec(p + "attn_kv_a_norm.weight", C);
    if (b.has(p + "attn_k_b.weight") || b.has(p + "attn_v_b.weight")) {  // as mla_form
        L.wk_b = b.stack(p + "attn_k_b.weight", m.qk_nope, C, H);
        L.wv_b = b.stack(p + "attn_v_b.weight", C, m.v_head_dim, H);
    } else if (b.has(p + "attn_kv_b.weight")) {
        if (hp.arch.attention != AttentionKind::mla)  // kimi_linear.md, "Legacy-form caveat"
            fail(Status::unsupported, "tensor '" + p + "attn_kv_b.weight': legacy-form MLA is not supported for " +
                                          hp.arch.name + " (llama.cpp's graph and the HF model order its key parts "
                                          "differently); convert the model again to get attn_k_b / attn_v_b");
        bind_legacy_kv_b(b, hp, p, L, owned_bytes);
    } else {
        fail(Status::format, "tensors '" + p + "attn_k_b.weight' and '" + p + "attn_v_b.weight' (or the legacy '" + p +
                                 "attn_kv_b.weight') are missing");
    }
    L.wo = b.matrix(p + "attn_output.weight", hp.n_attn_out(), E);
}

uint64_t owned_layer_bytes(const gguf::ModelFile& file, const Hparams& hp, int il) {
    if (!hp.is_mla()) return 0;
    const std::string p = "blk." + std::to_string(il) + ".";
    return !mla_form(file, p) && file.find_tensor(p + "attn_kv_b.weight") ? legacy_k_b_bytes(hp) : 0;
}

void bind_moe_ffn(Binder& b, const Hparams& hp, const std::string& p, LayerWeights& L) {
    const MoeParams& e = hp.moe;
    const int64_t E = hp.n_embd;
    L.moe = true;
    L.gate_inp = b.matrix(p + "ffn_gate_inp.weight", E, e.n_expert);
    L.exp_probs_b = b.vec(p + "exp_probs_b.bias", e.n_expert, /*required=*/false);
    const int64_t Le = e.latent > 0 ? e.latent : E;  // K3: experts run in the latent width
    L.gate_exps = b.stack(p + "ffn_gate_exps.weight", Le, e.n_ff_exp, e.n_expert);
    L.up_exps = b.stack(p + "ffn_up_exps.weight", Le, e.n_ff_exp, e.n_expert);
    L.down_exps = b.stack(p + "ffn_down_exps.weight", e.n_ff_exp, Le, e.n_expert);
    if (e.n_expert_shared > 0) {
        const int64_t F = e.n_ff_exp * e.n_expert_shared;
        L.gate_shexp = b.matrix(p + "ffn_gate_shexp.weight", E, F);
        L.up_shexp = b.matrix(p + "ffn_up_shexp.weight", E, F);
        L.down_shexp = b.matrix(p + "ffn_down_shexp.weight", F, E);
    }
}

}  // namespace strata::model
