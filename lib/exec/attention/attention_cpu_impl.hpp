// The attention segment kernel (attention_cpu.hpp), written once over a vector-operations type
// Ops and instantiated by attention_cpu_scalar.cpp, _avx2.cpp and _avx512.cpp, each compiled with
// its own instruction set. Include only from those files: every Ops type lives in its file's
// unnamed namespace, so each file's instantiations stay local to it (no inline function compiled
// for AVX-512 can be picked by the linker for a caller on another CPU). For the same reason this
// header uses no standard-library templates.
//
// Layouts (all widths padded to kPad floats, which every Ops::W divides):
//   work:  q rows [n_rows][dkp] (zero past dk), then scores [n_rows][kSegment];
//   state: acc [n_rows][dvp] (the unnormalised sum of p_j v_j), then m [n_rows] (the segment's
//          largest score), then l [n_rows] (its sum of p_j = exp(score_j - m)).
#pragma once

#include <cstring>
#include <type_traits>

#include "attention_cpu.hpp"
#include "attention_cpu_kernels.hpp"

namespace strata::exec::attn::detail {

// exp(x) for x <= 0 (score minus the maximum), within about 2 ulp: x = n ln2 + r with |r| <= ln2/2
// (ln2 split in two so that n ln2 is exact to float precision), e^r by its Taylor polynomial of
// degree 7 (truncation < 1e-8 relative), times 2^n. Below -87 (where 2^n would leave the normal
// range) the result is 0, so exp(-inf) = 0. Ops supplies round (to nearest), pow2 (2^n for an
// integral n in [-126, 127]) and zero_below.
template <class Ops>
typename Ops::V exp_nonpositive(typename Ops::V x) {
    using V = typename Ops::V;
    const V n = Ops::round(Ops::mul(x, Ops::set1(1.44269504f)));
    V r = Ops::fma(n, Ops::set1(-0.693359375f), x);
    r = Ops::fma(n, Ops::set1(2.12194440e-4f), r);
    V p = Ops::set1(1.0f / 5040.0f);
    p = Ops::fma(p, r, Ops::set1(1.0f / 720.0f));
    p = Ops::fma(p, r, Ops::set1(1.0f / 120.0f));
    p = Ops::fma(p, r, Ops::set1(1.0f / 24.0f));
    p = Ops::fma(p, r, Ops::set1(1.0f / 6.0f));
    p = Ops::fma(p, r, Ops::set1(0.5f));
    p = Ops::fma(p, r, Ops::set1(1.0f));
    p = Ops::fma(p, r, Ops::set1(1.0f));
    return Ops::zero_below(x, -87.0f, Ops::mul(p, Ops::pow2(n)));
}

template <class Ops>
struct SegmentKernel {
    using V = typename Ops::V;
    static constexpr int64_t W = Ops::W;
    static_assert(kPad % W == 0 && kSegment % kPad == 0);

    // A switch to a compile-time row count, so that the row accumulators live in registers.
    template <class F>
    static void by_rows(int64_t nr, F&& f) {
        switch (nr) {
            case 1: f(std::integral_constant<int, 1>{}); break;
            case 2: f(std::integral_constant<int, 2>{}); break;
            case 3: f(std::integral_constant<int, 3>{}); break;
            case 4: f(std::integral_constant<int, 4>{}); break;
            case 5: f(std::integral_constant<int, 5>{}); break;
            case 6: f(std::integral_constant<int, 6>{}); break;
            case 7: f(std::integral_constant<int, 7>{}); break;
            default: f(std::integral_constant<int, 8>{}); break;
        }
    }

    // Asks for the cache lines of the `bytes` bytes at p: decode reads each head's rows at a stride
    // of all heads' rows, which the hardware prefetchers do not follow, so a cold cache would cost
    // one memory latency per row.
    static void prefetch(const uint8_t* p, uint64_t bytes) {
        for (uint64_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off);
        __builtin_prefetch(p + bytes - 1);
    }
    static constexpr int64_t kAhead = 12;  // rows

    // Scores of NR rows (q: their padded rows) against keys [k0, k1): sc[r * kSegment + j - k0].
    // Each key row is read and converted once for the NR rows; a row's dot product is the same
    // chain of fused multiply-adds over the chunks, and the same reduction (hsum4, rows padded to
    // a multiple of 4 with zeros), whatever NR is. The value rows of the keys ahead are fetched
    // here too, for values() (fetch: the first group of rows only).
    template <RowType T, int NR>
    static void scores(const float* q, int64_t dkp, int64_t dk, const Rows& k, const Rows& v, int64_t k0, int64_t k1,
                       uint64_t k_bytes, uint64_t v_bytes, bool fetch, float scale, float* sc) {
        constexpr int NR4 = (NR + 3) / 4 * 4;
        const int64_t full = dk / W, tail = dk - full * W;
        for (int64_t j = k0; j < k1; ++j) {
            if (fetch && j + kAhead < k1) {
                prefetch(k.data + uint64_t(j + kAhead) * k.stride, k_bytes);
                if (v.data != k.data) prefetch(v.data + uint64_t(j + kAhead) * v.stride, v_bytes);
            }
            const uint8_t* row = k.data + uint64_t(j) * k.stride;
            V acc[NR4];
            for (int r = 0; r < NR4; ++r) acc[r] = Ops::zero();
            for (int64_t c = 0; c < full; ++c) {
                const V kv = Ops::template row<T>(row, c);
                for (int r = 0; r < NR; ++r) acc[r] = Ops::fma(Ops::load(q + r * dkp + c * W), kv, acc[r]);
            }
            if (tail) {
                const V kv = Ops::template row_tail<T>(row, full, tail);
                for (int r = 0; r < NR; ++r) acc[r] = Ops::fma(Ops::load(q + r * dkp + full * W), kv, acc[r]);
            }
            float sums[NR4];
            for (int r = 0; r < NR4; r += 4) Ops::hsum4(acc[r], acc[r + 1], acc[r + 2], acc[r + 3], sums + r);
            for (int r = 0; r < NR; ++r) sc[r * kSegment + (j - k0)] = sums[r] * scale;
        }
    }

    // acc[r][chunk] = sum over keys j in [k0, k1), in key order, of p[r][j] * v_j[chunk], for NR
    // rows; each value chunk is converted once for the NR rows.
    template <RowType T, int NR>
    static void values(const float* p, const Rows& v, int64_t k0, int64_t k1, int64_t dv, int64_t dvp, float* acc) {
        const int64_t full = dv / W, tail = dv - full * W;
        for (int64_t c = 0; c < full + (tail ? 1 : 0); ++c) {
            V a[NR];
            for (int r = 0; r < NR; ++r) a[r] = Ops::zero();
            for (int64_t j = k0; j < k1; ++j) {
                const uint8_t* row = v.data + uint64_t(j) * v.stride;
                const V vv = c < full ? Ops::template row<T>(row, c) : Ops::template row_tail<T>(row, c, tail);
                for (int r = 0; r < NR; ++r) a[r] = Ops::fma(Ops::set1(p[r * kSegment + (j - k0)]), vv, a[r]);
            }
            for (int r = 0; r < NR; ++r) Ops::store(acc + r * dvp + c * W, a[r]);
        }
    }

    template <RowType T>
    static void segment(const Group& g, int64_t seg, float* state, float* work) {
        const int64_t k0 = seg * kSegment, k1 = g.n_keys < k0 + kSegment ? g.n_keys : k0 + kSegment;
        const int64_t nk = k1 - k0, nkp = padded(nk), M = g.n_rows;
        const int64_t dkp = padded(g.dk), dvp = padded(g.dv);
        float* q = work;
        float* sc = work + M * dkp;
        for (int64_t r = 0; r < M; ++r) {
            float* dst = q + r * dkp;
            std::memcpy(dst, g.q_a + r * g.q_a_stride, size_t(g.dk_a) * sizeof(float));
            if (g.dk > g.dk_a) std::memcpy(dst + g.dk_a, g.q_b + r * g.q_b_stride, size_t(g.dk - g.dk_a) * sizeof(float));
            for (int64_t d = g.dk; d < dkp; ++d) dst[d] = 0.0f;
        }
        for (int64_t j = k0; j < k0 + (nk < kAhead ? nk : kAhead); ++j) {  // the rows before the prefetch distance
            prefetch(g.k.data + uint64_t(j) * g.k.stride, stored_bytes(T, g.dk));
            if (g.v.data != g.k.data) prefetch(g.v.data + uint64_t(j) * g.v.stride, stored_bytes(T, g.dv));
        }
        for (int64_t r0 = 0; r0 < M; r0 += 8)
            by_rows(M - r0, [&](auto nr) {
                scores<T, decltype(nr)::value>(q + r0 * dkp, dkp, g.dk, g.k, g.v, k0, k1, stored_bytes(T, g.dk),
                                               stored_bytes(T, g.dv), r0 == 0, g.scale, sc + r0 * kSegment);
            });
        // Softmax numerators per row. The padding scores are -inf, so they add exp(-inf) = 0.
        float* m = state + M * dvp;
        float* l = m + M;
        for (int64_t r = 0; r < M; ++r) {
            float* s = sc + r * kSegment;
            for (int64_t j = nk; j < nkp; ++j) s[j] = -__builtin_inff();
            V mx = Ops::set1(-__builtin_inff());
            for (int64_t j = 0; j < nkp; j += W) mx = Ops::max(mx, Ops::load(s + j));
            const float mr = Ops::hmax(mx);
            const V vm = Ops::set1(mr);
            V sum = Ops::zero();
            for (int64_t j = 0; j < nkp; j += W) {
                const V e = Ops::exp(Ops::sub(Ops::load(s + j), vm));
                Ops::store(s + j, e);
                sum = Ops::add(sum, e);
            }
            m[r] = mr;
            l[r] = Ops::hsum(sum);
        }
        for (int64_t r0 = 0; r0 < M; r0 += 8)
            by_rows(M - r0, [&](auto nr) {
                values<T, decltype(nr)::value>(sc + r0 * kSegment, g.v, k0, k1, g.dv, dvp, state + r0 * dvp);
            });
    }

    static void segment_any(const Group& g, int64_t seg, float* state, float* work) {
        switch (g.k.type) {
            case RowType::f32: segment<RowType::f32>(g, seg, state, work); break;
            case RowType::f16: segment<RowType::f16>(g, seg, state, work); break;
            case RowType::q8_0: segment<RowType::q8_0>(g, seg, state, work); break;
        }
    }

    // a = a (+) b: both partials rescaled to the larger of their maxima.
    static void merge(const Group& g, float* a, const float* b) {
        const int64_t M = g.n_rows, dvp = padded(g.dv);
        float *am = a + M * dvp, *al = am + M;
        const float *bm = b + M * dvp, *bl = bm + M;
        for (int64_t r = 0; r < M; ++r) {
            const float mx = am[r] > bm[r] ? am[r] : bm[r];
            const float fa = Ops::exp1(am[r] - mx), fb = Ops::exp1(bm[r] - mx);
            al[r] = al[r] * fa + bl[r] * fb;
            am[r] = mx;
            const V va = Ops::set1(fa), vb = Ops::set1(fb);
            float* ar = a + r * dvp;
            const float* br = b + r * dvp;
            for (int64_t d = 0; d < dvp; d += W)
                Ops::store(ar + d, Ops::add(Ops::mul(Ops::load(ar + d), va), Ops::mul(Ops::load(br + d), vb)));
        }
    }

    static void finish(const Group& g, const float* state) {
        const int64_t M = g.n_rows, dvp = padded(g.dv);
        const float* l = state + M * dvp + M;
        for (int64_t r = 0; r < M; ++r) {
            const float inv = 1.0f / l[r];
            const float* acc = state + r * dvp;
            float* o = g.out + r * g.out_stride;
            for (int64_t d = 0; d < g.dv; ++d) o[d] = acc[d] * inv;
        }
    }

    static constexpr Fns fns{&segment_any, &merge, &finish};
};

}  // namespace strata::exec::attn::detail
