#include "exec/device_activations.hpp"

#include <algorithm>

#include "model/hparams.hpp"

namespace strata::exec {

uint64_t device_activation_bytes(const DeviceActivationWidths& w, int64_t n_tokens, uint64_t align) {
    auto rounded = [&](uint64_t bytes) { return (bytes + align - 1) / align * align; };
    uint64_t total = 0;
    zip_device_activations(w, w, [&](int64_t width, int64_t) {
        if (width > 0) total += rounded(uint64_t(width) * uint64_t(n_tokens) * sizeof(float));
    });
    if (w.chosen_ints > 0) total += rounded(uint64_t(w.chosen_ints) * uint64_t(n_tokens) * sizeof(int32_t));
    return total;
}

DeviceActivationWidths device_activation_widths(const model::Hparams& hp, int first, int last) {
    bool gqa = false, mla = false, kda = false, dense = false, moe = false;
    for (int il = first; il < last; ++il) {
        const bool rec = hp.is_recurrent_layer(il);
        kda = kda || rec;
        mla = mla || (!rec && hp.is_mla());
        gqa = gqa || (!rec && !hp.is_mla());
        dense = dense || !hp.is_moe_layer(il);
        moe = moe || hp.is_moe_layer(il);
    }
    DeviceActivationWidths w;
    const int64_t E = hp.n_embd;
    w.x = w.xn = w.proj = E;
    if (gqa) {
        w.q = hp.n_q();
        w.k = w.v = hp.n_kv();
        w.att = hp.n_q();
    }
    if (mla) {
        const model::MlaParams& m = hp.mla;
        w.q = hp.n_q();
        w.q_a = m.q_lora_rank;
        w.ckv = m.kv_lora_rank + hp.rope.n_rot;
        w.q_abs = w.o_lat = hp.n_head * m.kv_lora_rank;
        w.head_in = hp.n_head * m.qk_nope;
        w.head_out = hp.n_head * m.v_head_dim;
        w.att = std::max(w.att, hp.n_attn_out());
    }
    if (kda) {
        const int64_t D = hp.kda_width();
        w.kq = w.kk = w.kv = w.kz = w.kgate = w.kg = w.ko = D;
        w.klow = hp.kda.head_dim;
        w.kbeta = w.kb = hp.n_head;
        w.att = std::max(w.att, D);
    }
    const int64_t shared_ff = moe ? hp.moe.n_ff_exp * hp.moe.n_expert_shared : 0;
    w.gate = w.up = std::max(dense ? hp.n_ff : 0, shared_ff);
    if (hp.attn_res_block > 0) {
        w.mixed = E;
        w.bank = hp.max_banks() * E;
    }
    if (moe) {
        const model::MoeParams& e = hp.moe;
        const int64_t Le = e.latent > 0 ? e.latent : E, K = e.n_expert_used;
        w.router = e.n_expert;
        w.zlat = e.latent;
        w.moe_up = e.latent > 0 ? E : 0;
        w.moe_out = std::max(Le, E);
        w.xe = w.de = K * Le;
        w.ge = w.ue = K * e.n_ff_exp;
        w.chosen_w = K;
        w.chosen_ints = 3 * K;
    }
    return w;
}

}  // namespace strata::exec
