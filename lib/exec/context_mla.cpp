// Multi-head latent attention (deepseek2.md), in the absorbed form for prefill and decode alike:
// the cache holds the normalized latent c and the rotated key k_pe of each position; a head's
// query is moved into the latent space (q_abs = k_b[h] q_nope), scored against c and k_pe, and
// its latent-space output moved back by v_b[h]. One (token, head) pair is one unit of work done
// the same way whatever the batch, so one-token decode reproduces prefill exactly.
#include <cmath>

#include "exec/context.hpp"
#include "exec/context_scratch.hpp"
#include "exec/ops.hpp"
#include "quant/gemv.hpp"
#include "quant/iq1s_dot.hpp"

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

void Context::attention_scores_mla(int64_t li, int64_t n) {
    const model::MlaParams& m = hp_.mla;
    const int64_t H = hp_.n_head, C = m.kv_lora_rank, R = hp_.rope.n_rot, Qw = m.qk_nope + R, W = C + R;
    const float scale = float(m.kq_scale);
    Scratch& s = *s_;
    const bool avx2 = quant::resolve_iq1s_kernel(quant::Iq1sKernel::best) == quant::Iq1sKernel::avx2;
    auto dot = [avx2](const float* a, const float* b, int64_t len) {
        return avx2 ? quant::dot_f32_avx2(a, b, len) : quant::dot_f32_scalar(a, b, len);
    };
    // One slot's tokens at a time: its cached rows once, shared by all its heads.
    for (const SeqRun& run : s.runs) {
        const int64_t n_rows = run.pos + run.n;
        latent_.load(mla_slot_[size_t(li)], cache_row(run.seq, 0), n_rows, s.latent.data());
        backend_->parallel_for(run.n * H, [&](int64_t begin, int64_t end) {
            std::vector<float> scores(static_cast<size_t>(n_rows));
            for (int64_t job = begin; job < end; ++job) {
                const int64_t t = run.first + job / H, h = job % H;
                const int64_t n_keys = run.pos + (t - run.first) + 1;  // causal
                const float* qa = s.q_abs.data() + (h * n + t) * C;
                const float* qpe = s.q.data() + t * H * Qw + h * Qw + m.qk_nope;
                for (int64_t p = 0; p < n_keys; ++p) {
                    const float* key = s.latent.data() + p * W;
                    scores[size_t(p)] = (dot(qa, key, C) + dot(qpe, key + C, R)) * scale;
                }
                softmax(scores.data(), n_keys);
                float* o = s.o_lat.data() + (h * n + t) * C;
                std::fill(o, o + C, 0.0f);
                for (int64_t p = 0; p < n_keys; ++p) {
                    const float a = scores[size_t(p)];
                    const float* key = s.latent.data() + p * W;
                    for (int64_t c = 0; c < C; ++c) o[c] += a * key[c];
                }
            }
        });
    }
}

}  // namespace strata::exec
