// The activation buffers of a Context (internal to exec/context*.cpp). Which buffers an
// architecture needs and how large they are is written once, in for_each_buffer, and used both
// by the memory plan (before anything is allocated) and by the allocation itself.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "exec/backend.hpp"
#include "context.hpp"
#include "exec/moe/expert_groups.hpp"
#include "exec/moe/moe_router.hpp"
#include "exec/rope.hpp"

namespace strata::exec {

// Consecutive tokens of one micro-batch that belong to one sequence slot, at positions pos..
struct SeqRun {
    int32_t seq = 0;
    int64_t first = 0, n = 0;  // the micro-batch's tokens [first, first + n)
    int64_t pos = 0;           // the first one's position in its slot
};

// Rows are tokens of one micro-batch (n_batch of them) unless said otherwise.
struct Context::Scratch {
    // The micro-batch's layout: its runs in token order, and each token's slot and position.
    std::vector<SeqRun> runs;
    std::vector<int32_t> tok_seq;     // [n]
    std::vector<int64_t> tok_pos;     // [n]
    std::vector<float> x, xn, proj;   // [n, n_embd]: hidden state, normalized, block output
    std::vector<float> q;             // [n, n_q]
    std::vector<float> attn;          // [n, n_attn_out] attention output before attn_output
    std::vector<float> cos, sin;      // [n, n_rot/2]
    std::vector<float> gate, up;      // [n, widest dense or shared-expert FFN]
    // gqa
    std::vector<float> k, v;          // [n, n_kv]
    // mla (deepseek2.md)
    std::vector<float> q_a;           // [n, q_lora]
    std::vector<float> ckv;           // [n, C + R]: normalized latent, rotated key
    std::vector<float> q_abs, o_lat;  // [n_head][n][C]: absorbed queries, attention in the latent space
    std::vector<float> head_in;       // [n_head][n][qk_nope]: q_nope head-major, contiguous per head
    std::vector<float> head_out;      // [n_head][n][v_head_dim]
    std::vector<float> latent;        // [n_ctx, C + R]: the layer's cache as float32 (per position)
    // kda (kimi_linear.md): D = n_head * dk
    std::vector<float> kq, kk, kv;    // [n, D]: q, k, v (convolved in place)
    std::vector<float> kz;            // [n, D]: the decay gate's pre-activation
    std::vector<float> klow;          // [n, dk]: the low-rank gate's inner width
    std::vector<float> kbeta;         // [n, n_head]
    std::vector<float> kgate;         // [n, D]: the output gate
    // K3 attention residuals
    std::vector<float> mixed;         // [n, n_embd]
    std::vector<float> bank;          // [n, max_bank, n_embd]: each token's checkpoints
    // moe
    std::vector<float> zlat;          // [n, L]: K3 latent experts' input
    std::vector<float> moe_up;        // [n, n_embd]: K3 latent experts' output, back at full width
    std::vector<float> router;        // [n, n_expert]
    std::vector<float> moe_out;       // [n, n_embd]
    std::vector<float> xe, de;        // [n * n_expert_used, n_embd]: the routed rows, grouped by expert
    std::vector<float> ge, ue;        // [n * n_expert_used, n_ff_exp]
    std::vector<int32_t> chosen;      // [n, n_expert_used]
    std::vector<float> chosen_w;      // [n, n_expert_used]
    std::unique_ptr<MoeRouter> router_state;  // moe only
    ExpertGroups groups;               // the routed rows grouped by expert (xe/ge/ue/de rows)
    // matmul_many jobs (per-head products, per-expert products)
    std::vector<model::WeightView> mats;
    std::vector<MatmulJob> jobs;
    std::unique_ptr<Rope> rope;
};

// Calls f(buffer, floats, per_position) for every float buffer: per_position false: floats for
// n_batch tokens; true: floats for n_ctx positions (it grows with the context). Dense FFN width: the widest dense layer of the range
// or the shared experts.
template <class F>
void for_each_buffer(const model::Hparams& hp, bool any_dense, int64_t n_batch, int64_t n_ctx, Context::Scratch& s, F&& f) {
    const int64_t E = hp.n_embd;
    auto tok = [&](std::vector<float>& b, int64_t per_token) { f(b, n_batch * per_token, false); };
    const int64_t ff = std::max(any_dense ? hp.n_ff : 0, hp.moe.n_ff_exp * hp.moe.n_expert_shared);
    tok(s.x, E);
    tok(s.xn, E);
    tok(s.proj, E);
    tok(s.q, hp.n_q());
    const int64_t D = hp.kda_width();
    tok(s.attn, std::max(hp.n_attn_out(), D));
    tok(s.cos, (hp.rope.n_rot / 2));
    tok(s.sin, (hp.rope.n_rot / 2));
    tok(s.gate, ff);
    tok(s.up, ff);
    if (!hp.is_mla()) {
        tok(s.k, hp.n_kv());
        tok(s.v, hp.n_kv());
    } else {
        const model::MlaParams& m = hp.mla;
        const int64_t width = m.kv_lora_rank + hp.rope.n_rot;
        tok(s.q_a, m.q_lora_rank);
        tok(s.ckv, width);
        tok(s.q_abs, hp.n_head * m.kv_lora_rank);
        tok(s.o_lat, hp.n_head * m.kv_lora_rank);
        tok(s.head_in, hp.n_head * m.qk_nope);
        tok(s.head_out, hp.n_head * m.v_head_dim);
        f(s.latent, n_ctx * width, true);
    }
    if (hp.kda.head_dim > 0) {
        tok(s.kq, D);
        tok(s.kk, D);
        tok(s.kv, D);
        tok(s.kz, D);
        tok(s.klow, hp.kda.head_dim);
        tok(s.kbeta, hp.n_head);
        tok(s.kgate, D);
    }
    if (hp.attn_res_block > 0) {
        tok(s.mixed, E);
        tok(s.bank, hp.max_banks() * E);
    }
    if (hp.moe.n_expert > 0) {
        const int64_t Le = hp.moe.latent > 0 ? hp.moe.latent : E;  // the experts' width
        tok(s.zlat, hp.moe.latent);
        tok(s.moe_up, hp.moe.latent > 0 ? E : 0);
        tok(s.router, hp.moe.n_expert);
        tok(s.moe_out, std::max(Le, E));
        const int64_t K = hp.moe.n_expert_used;
        tok(s.xe, K * Le);
        tok(s.de, K * Le);
        tok(s.ge, K * hp.moe.n_ff_exp);
        tok(s.ue, K * hp.moe.n_ff_exp);
        tok(s.chosen_w, hp.moe.n_expert_used);
    }
}

}  // namespace strata::exec
