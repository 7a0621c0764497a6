// The CPU attention kernels (lib/exec/attention/attention_cpu.hpp) against a float64 softmax(q K^T) V on
// random queries and caches (f32, f16, q8_0 rows; head widths with and without a vector tail;
// 1 .. 700 keys across segment boundaries), and their bit-exactness contract: a row's result does
// not depend on the rows grouped with it, the thread count, or whether its segments were spread
// over threads, so a one-token decode equals the same token inside a prefill.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "exec/attention/attention_cpu.hpp"
#include "exec/cpu_backend.hpp"
#include "quant/half.hpp"
#include "quant/codecs/q8_0.hpp"
#include "test_support.hpp"

using namespace strata;
using exec::attn::Group;
using exec::attn::Kernel;
using exec::attn::RowType;

namespace {

// The kernels this CPU runs (scalar always).
std::vector<Kernel> kernels() {
    std::vector<Kernel> ks{Kernel::scalar};
    for (Kernel k : {Kernel::avx2, Kernel::avx512})
        if (exec::attn::resolve(k) == k) ks.push_back(k);
    return ks;
}

uint64_t stored_bytes(RowType t, int64_t n) {
    return t == RowType::f32 ? uint64_t(n) * 4 : t == RowType::f16 ? uint64_t(n) * 2 : uint64_t(n / 32) * 34;
}

// n_keys rows of width values, each stored at offset `lead` of a row of `stride` bytes whose other
// bytes are 0xff (a NaN as f16 and f32), so that a kernel reading outside its head shows.
struct Cache {
    RowType type;
    int64_t width, n_keys;
    uint64_t lead, stride;
    std::vector<uint8_t> bytes;
    std::vector<double> values;  // what the stored rows decode to, [n_keys][width]

    Cache(RowType t, int64_t w, int64_t n, std::mt19937_64& rng, float sd) : type(t), width(w), n_keys(n) {
        const uint64_t rb = stored_bytes(t, w);
        lead = rb / 2 + 3;
        stride = rb * 2 + 7;
        bytes.assign(size_t(stride * uint64_t(n) + 64), 0xff);
        values.resize(size_t(n * w));
        std::normal_distribution<float> nd(0.0f, sd);
        std::vector<float> row(static_cast<size_t>(w)), back(static_cast<size_t>(w));
        for (int64_t p = 0; p < n; ++p) {
            for (auto& x : row) x = nd(rng);
            uint8_t* dst = bytes.data() + uint64_t(p) * stride + lead;
            if (t == RowType::f32) {
                std::memcpy(dst, row.data(), size_t(w) * 4);
                back = row;
            } else if (t == RowType::f16) {
                for (int64_t i = 0; i < w; ++i) {
                    const uint16_t h = quant::f32_to_f16(row[size_t(i)]);
                    std::memcpy(dst + i * 2, &h, 2);
                    back[size_t(i)] = quant::f16_to_f32(h);
                }
            } else {
                std::vector<quant::block_q8_0> blocks(size_t(w / 32));
                quant::quantize_row_q8_0(row.data(), blocks.data(), w);
                std::memcpy(dst, blocks.data(), blocks.size() * sizeof(quant::block_q8_0));
                quant::dequantize_row_q8_0(blocks.data(), back.data(), w);
            }
            for (int64_t i = 0; i < w; ++i) values[size_t(p * w + i)] = back[size_t(i)];
        }
    }
    exec::attn::Rows rows() const { return {bytes.data() + lead, stride, type}; }
};

// A problem: n_rows queries (in two parts, dk_a then dk - dk_a floats, at strides with gaps),
// keys and values (values: their own cache, or the first dv values of the key rows when shared).
struct Problem {
    int64_t n_rows, dk_a, dk, dv;
    std::vector<float> qa, qb, out;
    Cache k, v;
    bool shared;
    float scale;

    Problem(RowType t, int64_t rows, int64_t dk_, int64_t dka, int64_t dv_, int64_t n_keys, bool share, float peak,
            std::mt19937_64& rng)
        : n_rows(rows), dk_a(dka), dk(dk_), dv(dv_), k(t, dk_, n_keys, rng, 1.0f), v(t, share ? 32 : dv_, share ? 1 : n_keys, rng, 1.0f),
          shared(share), scale(peak / std::sqrt(float(dk_))) {
        std::normal_distribution<float> nd(0.0f, 1.0f);
        qa.resize(size_t(rows * (dk_a + 5)));
        qb.resize(size_t(rows * (dk - dk_a + 3) + 1));
        for (auto& x : qa) x = nd(rng);
        for (auto& x : qb) x = nd(rng);
        out.assign(size_t(rows * (dv + 2)), NAN);
    }

    Group group(int64_t n_keys, int64_t first_row = 0, int64_t rows = -1) {
        Group g;
        g.q_a = qa.data() + first_row * (dk_a + 5);
        g.q_a_stride = dk_a + 5;
        g.q_b = qb.data() + first_row * (dk - dk_a + 3);
        g.q_b_stride = dk - dk_a + 3;
        g.dk_a = dk_a;
        g.dk = dk;
        g.dv = dv;
        g.n_rows = rows < 0 ? n_rows : rows;
        g.n_keys = n_keys;
        g.k = k.rows();
        g.v = shared ? k.rows() : v.rows();
        g.scale = scale;
        g.out = out.data() + first_row * (dv + 2);
        g.out_stride = dv + 2;
        return g;
    }

    double q(int64_t r, int64_t i) const {
        return i < dk_a ? qa[size_t(r * (dk_a + 5) + i)] : qb[size_t(r * (dk - dk_a + 3) + i - dk_a)];
    }
    double value(int64_t p, int64_t i) const {
        return shared ? k.values[size_t(p * dk + i)] : v.values[size_t(p * dv + i)];
    }

    // Row r of softmax(scale q K^T) V over keys [0, n_keys), in float64 from the stored values.
    std::vector<double> reference(int64_t r, int64_t n_keys) const {
        std::vector<double> s(static_cast<size_t>(n_keys)), o(static_cast<size_t>(dv), 0.0);
        double mx = -INFINITY, sum = 0.0;
        for (int64_t p = 0; p < n_keys; ++p) {
            double d = 0.0;
            for (int64_t i = 0; i < dk; ++i) d += q(r, i) * k.values[size_t(p * dk + i)];
            s[size_t(p)] = d * double(scale);
            mx = std::max(mx, s[size_t(p)]);
        }
        for (auto& x : s) sum += (x = std::exp(x - mx));
        for (int64_t p = 0; p < n_keys; ++p)
            for (int64_t i = 0; i < dv; ++i) o[size_t(i)] += s[size_t(p)] / sum * value(p, i);
        return o;
    }
    const float* row_out(int64_t r) const { return out.data() + r * (dv + 2); }
};

struct Shape {
    int64_t dk, dk_a, dv;
    bool shared;
};

}  // namespace

TEST_CASE("attention kernels match a float64 softmax(q K^T) V for f32, f16 and q8_0 caches") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    // 64 and 128 (llama-family heads), 72 and 20 (a vector tail on 16- and 8-wide kernels; not
    // for q8_0), 96 = 64 + 32 split query parts with values shared with the keys (latent
    // attention's shape, scaled down).
    const Shape shapes[] = {{64, 64, 64, false}, {128, 128, 128, false}, {72, 72, 72, false},
                            {20, 20, 20, false}, {96, 64, 64, true}};
    for (Kernel kernel : kernels()) {
        CAPTURE(exec::attn::kernel_name(kernel));
        double worst_all = 0.0;
        for (RowType type : {RowType::f32, RowType::f16, RowType::q8_0}) {
            CAPTURE(int(type));
            for (const Shape& sh : shapes) {
                if (type == RowType::q8_0 && (sh.dk % 32 || sh.dv % 32)) continue;
                CAPTURE(sh.dk);
                for (int64_t n_keys : {int64_t(1), int64_t(7), int64_t(256), int64_t(257), int64_t(700)}) {
                    CAPTURE(n_keys);
                    // peak 1: scores of spread ~1; peak 8: a few keys dominate and most of the
                    // exponentials underflow towards the kernels' cut-off.
                    for (float peak : {1.0f, 8.0f}) {
                        CAPTURE(peak);
                        const int64_t rows = n_keys == 257 ? 9 : 3;
                        Problem pr(type, rows, sh.dk, sh.dk_a, sh.dv, n_keys, sh.shared, peak, rng);
                        exec::attn::attend_one(pr.group(n_keys), kernel);
                        double worst = 0.0;
                        for (int64_t r = 0; r < rows; ++r) {
                            const auto ref = pr.reference(r, n_keys);
                            for (int64_t i = 0; i < sh.dv; ++i)
                                worst = std::max(worst, std::abs(double(pr.row_out(r)[i]) - ref[size_t(i)]));
                            CHECK(std::isnan(pr.row_out(r)[sh.dv]));  // nothing written past dv
                        }
                        // Values are ~N(0, 1) and the output a convex mix of them; float32 dots of
                        // up to 128 terms, sums of up to 700 weights, scores of spread 8 (their
                        // rounding amplified by exp): measured over 8 seeds <= 5.3e-6 (SIMD) and
                        // <= 1.3e-5 (scalar: one accumulator, so the error grows with the keys).
                        CHECK(worst <= 4e-5);
                        worst_all = std::max(worst_all, worst);
                    }
                }
            }
        }
        MESSAGE(std::string(exec::attn::kernel_name(kernel)) << ": largest difference from float64 " << worst_all);
    }
}

TEST_CASE("attention: a row's result is bit-identical whatever rows, threads or schedule share its group") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed + 1);
    exec::CpuBackend one(1), two(2), three(3);
    for (Kernel kernel : kernels()) {
        CAPTURE(exec::attn::kernel_name(kernel));
        for (RowType type : {RowType::f16, RowType::q8_0, RowType::f32}) {
            CAPTURE(int(type));
            const int64_t rows = 11, n_keys = 613, dk = 64;
            Problem pr(type, rows, dk, dk, dk, n_keys, false, 2.0f, rng);
            // Alone, one row at a time.
            std::vector<float> alone(static_cast<size_t>(rows * dk));
            for (int64_t r = 0; r < rows; ++r) {
                exec::attn::attend_one(pr.group(n_keys, r, 1), kernel);
                std::memcpy(alone.data() + r * dk, pr.row_out(r), size_t(dk) * sizeof(float));
            }
            auto same = [&](const char* what) {
                CAPTURE(what);
                for (int64_t r = 0; r < rows; ++r)
                    CHECK(std::memcmp(alone.data() + r * dk, pr.row_out(r), size_t(dk) * sizeof(float)) == 0);
            };
            exec::attn::attend_one(pr.group(n_keys), kernel);
            same("all rows in one group");
            // Groups of 4, 4, 3 rows: three groups on 2 and 3 threads spread their 3 segments each
            // over the threads (split mode); on 1 thread each group runs whole.
            for (exec::CpuBackend* be : {&one, &two, &three}) {
                CAPTURE(be->n_threads());
                std::fill(pr.out.begin(), pr.out.end(), NAN);
                exec::attn::attend(*be, 3, [&](int64_t i) { return pr.group(n_keys, i * 4, i < 2 ? 4 : 3); }, kernel);
                same("groups of 4, 4, 3");
                // Eleven one-row groups: few enough to split on 3 threads, not on 2.
                std::fill(pr.out.begin(), pr.out.end(), NAN);
                exec::attn::attend(*be, rows, [&](int64_t i) { return pr.group(n_keys, i, 1); }, kernel);
                same("one-row groups");
            }
        }
    }
}

TEST_CASE("attention: one-token decode equals the same token inside a prefill, across segment boundaries") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed + 2);
    exec::CpuBackend two(2);
    for (Kernel kernel : kernels()) {
        CAPTURE(exec::attn::kernel_name(kernel));
        const int64_t n_tok = 530, dk = 64, G = 4;
        // Token t's G query heads are rows t*G .. t*G+G-1 and see keys 0 .. t (causal).
        Problem pr(RowType::f16, n_tok * G, dk, dk, dk, n_tok, false, 1.0f, rng);
        exec::attn::attend(two, n_tok, [&](int64_t t) { return pr.group(t + 1, t * G, G); }, kernel);
        const std::vector<float> prefill = pr.out;
        for (int64_t t : {int64_t(0), int64_t(255), int64_t(256), int64_t(511), int64_t(529)}) {
            CAPTURE(t);
            std::fill(pr.out.begin(), pr.out.end(), NAN);
            exec::attn::attend(two, 1, [&](int64_t) { return pr.group(t + 1, t * G, G); }, kernel);  // split mode
            CHECK(std::memcmp(pr.out.data() + t * G * (dk + 2), prefill.data() + t * G * (dk + 2),
                              size_t(G * (dk + 2)) * sizeof(float)) == 0);
        }
    }
}
