// Multi-head latent attention (deepseek2.md), in the absorbed form for prefill and decode alike:
// the cache holds the normalized latent c and the rotated key k_pe of each position; a head's
// query is moved into the latent space (q_abs = k_b[h] q_nope), scored against c and k_pe, and
// its latent-space output moved back by v_b[h]. One (token, head) pair is one unit of work done
// the same way whatever the batch, so one-token decode reproduces prefill exactly.
#include <algorithm>
#include <cmath>

#include "exec/attention/attention_cpu.hpp"
#include "context.hpp"
#include "context_scratch.hpp"
#include "exec/ops.hpp"

namespace strata::exec {

void Context::attention_mla(int64_t li, int64_t n) {
    const model::LayerWeights& L = w_.layers[size_t(li)];
    const model::MlaParams& m = hp_.mla;
    const int64_t H = hp_.n_head, C = m.kv_lora_rank, R = hp_.rope.n_rot, nope = m.qk_nope, vd = m.v_head_dim;
    const int64_t Qw = nope + R, W = C + R, P = s_->rope->n_pairs();
    Backend& be = *backend_;
    Scratch& s = *s_;

    if (m.q_lora_rank > 0) {
        be.matmul(L.wq_a, s.xn.data(), n, s.q_a.data());
        for (int64_t t = 0; t < n; ++t) {
            float* qa = s.q_a.data() + t * m.q_lora_rank;
            rms_norm(qa, L.q_a_norm.data(), m.q_lora_rank, hp_.rms_eps, qa);
        }
        be.matmul(L.wq_b, s.q_a.data(), n, s.q.data());
    } else {
        be.matmul(L.wq, s.xn.data(), n, s.q.data());
    }
    be.matmul(L.wkv_a, s.xn.data(), n, s.ckv.data());
    for (int64_t t = 0; t < n; ++t) {
        const float* c = s.cos.data() + t * P;
        const float* sn = s.sin.data() + t * P;
        float* row = s.ckv.data() + t * W;
        rms_norm(row, L.kv_a_norm.data(), C, hp_.rms_eps, row);  // the latent; the rope key is not normalized
        if (m.rotate) {  // Kimi: the rope parts are used unrotated
            s.rope->apply(row + C, c, sn);
            for (int64_t h = 0; h < H; ++h) s.rope->apply(s.q.data() + t * H * Qw + h * Qw + nope, c, sn);
        }
        latent_.store(mla_slot_[size_t(li)], cache_row(s.tok_seq[size_t(t)], s.tok_pos[size_t(t)]), row);
    }

    // Queries into the latent space: q_abs[h] = k_b[h] q_nope[h] for every token, every head in
    // one dispatch (head-major buffers, contiguous per head).
    std::vector<WeightView>& mats = s.mats;
    std::vector<MatmulJob>& jobs = s.jobs;
    mats.resize(size_t(H));
    jobs.resize(size_t(H));
    for (int64_t h = 0; h < H; ++h) {
        for (int64_t t = 0; t < n; ++t) {
            const float* src = s.q.data() + t * H * Qw + h * Qw;
            std::copy(src, src + nope, s.head_in.data() + (h * n + t) * nope);
        }
        mats[size_t(h)] = L.wk_b.mat(h);
        jobs[size_t(h)] = {&mats[size_t(h)], s.head_in.data() + h * n * nope, n, s.q_abs.data() + h * n * C};
    }
    be.matmul_many(jobs);
    attention_scores_mla(li, n);
    // Back out of the latent space: o[h] = v_b[h] o_lat[h], then the output projection.
    for (int64_t h = 0; h < H; ++h) {
        mats[size_t(h)] = L.wv_b.mat(h);
        jobs[size_t(h)] = {&mats[size_t(h)], s.o_lat.data() + h * n * C, n, s.head_out.data() + h * n * vd};
    }
    be.matmul_many(jobs);
    for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < n; ++t) {
            const float* src = s.head_out.data() + (h * n + t) * vd;
            std::copy(src, src + vd, s.attn.data() + t * H * vd + h * vd);
        }
    if (L.attn_gate.present()) {  // K3: a sigmoid gate from the normed layer input, before wo
        be.matmul(L.attn_gate, s.xn.data(), n, s.head_out.data());
        const float* g = s.head_out.data();
        for (int64_t i = 0; i < n * H * vd; ++i) s.attn[size_t(i)] *= 1.0f / (1.0f + std::exp(-g[i]));
    }
    be.matmul(L.wo, s.attn.data(), n, s.proj.data());
}

// Each (token, block of heads) is one group of the attention kernels (attention_cpu.hpp): the
// block's queries [q_abs | q_pe] against the cached rows [c | k_pe], the values being the rows'
// first kv_lora_rank values, read straight from the cache's storage. A row's result does not
// depend on the rows grouped with it, so the block size is free: blocks of 16 heads keep both
// threads busy on one decode token at a short context, and still share each row's read and
// conversion between 16 heads.
void Context::attention_scores_mla(int64_t li, int64_t n) {
    const model::MlaParams& m = hp_.mla;
    const int64_t H = hp_.n_head, C = m.kv_lora_rank, R = hp_.rope.n_rot, Qw = m.qk_nope + R;
    const int64_t HB = std::min<int64_t>(H, 16), n_blocks = (H + HB - 1) / HB;
    const attn::RowType type = latent_.type() == KvType::q8_0 ? attn::RowType::q8_0 : attn::RowType::f16;
    const uint64_t stride = latent_.row_bytes();
    const int64_t slot = mla_slot_[size_t(li)];
    Scratch& s = *s_;
    attn::attend(*backend_, n * n_blocks, [&](int64_t job) {
        const int64_t t = job / n_blocks, h0 = job % n_blocks * HB;
        const uint8_t* rows = latent_.row_data(slot, cache_row(s.tok_seq[size_t(t)], 0));
        attn::Group g;
        g.q_a = s.q_abs.data() + (h0 * n + t) * C;  // head-major: head h + 1 is n * C further on
        g.q_a_stride = n * C;
        g.q_b = s.q.data() + t * H * Qw + h0 * Qw + m.qk_nope;
        g.q_b_stride = Qw;
        g.dk_a = C;
        g.dk = C + R;
        g.dv = C;
        g.n_rows = std::min(HB, H - h0);
        g.n_keys = s.tok_pos[size_t(t)] + 1;  // causal
        g.k = g.v = {rows, stride, type};
        g.scale = float(m.kq_scale);
        g.out = s.o_lat.data() + (h0 * n + t) * C;
        g.out_stride = n * C;
        return g;
    });
}

}  // namespace strata::exec
