// The deepseek2 / kimi ops (cuda/kernels/ops/model_ops.cuh) against host references mirroring lib/exec, on
// fresh random data with ragged sizes, outputs poisoned before each run:
//   exact (bit for bit): gather_heads, scatter_heads, gather_rows, moe_combine (each product and
//     sum rounded alone, in the CPU loop's order); a negative row index gives NaN, not a read;
//   rms_norm_strided within 3e-7 relative of exec::rms_norm (both sum squares in double; only the
//     order differs, which can flip the float scale by one ulp: ~2 ulp on the output), out of place
//     and in place, the values of a row past n and the input left as they were;
//   ffn_activate within 1e-6 (SwiGLU) / 3e-6 (SiTU) relative, mul_sigmoid within 1e-6: CUDA's
//     expf and tanhf are within 2 ulp, libm's within 1, so each call may differ by 3 ulp
//     (3.6e-7), plus a rounding or two moved by that;
//   attn_res_mix: |err| <= 1e-5 * sum_j s_j |e_j[c]| (the scale of the terms mixed): a score may
//     differ by one float ulp (double sums in another order) and expf by 3 ulp, ~3e-6 on a weight
//     at worst, plus the n_bank + 1 roundings of the sum;
//   bad arguments: cudaErrorInvalidValue, empty inputs cudaSuccess. These launch nothing, so they
//     run before the device check and also on machines without a GPU.
// Exit 77 (ctest: skipped) with a printed reason when no GPU is present (after the argument checks).
// The kernels are UNTESTED ON A GPU until this program has run on one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "cuda_test_util.cuh"
#include "error_metrics.hpp"
#include "exec/ops.hpp"
#include "kernels/ops/model_ops.cuh"

using namespace strata;
using namespace strata::cuda_test;  // the test programs' helpers

namespace {

size_t count_differing_bits(const float* a, const float* b, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return bad;
}

std::vector<float> nan_vector(size_t n) { return std::vector<float>(n, NAN); }

int uniform_int(int lo, int hi) { return lo + int(rng() % uint64_t(hi - lo + 1)); }

// ---- argument checks (no launch, no device) ----------------------------------------------------

void test_arguments() {
    static float fake[1024];  // stands in for device buffers: nothing is launched, nothing read
    float* a = fake;
    float* b = fake + 256;
    float* c = fake + 512;
    const int32_t* ids = reinterpret_cast<const int32_t*>(fake + 768);
    const cudaError_t bad = cudaErrorInvalidValue, ok = cudaSuccess;
    struct Check {
        const char* what;
        cudaError_t got, want;
    };
    const Check checks[] = {
        {"rms_norm_strided x null", cuda::rms_norm_strided(nullptr, 8, b, 8, 2, 1e-5f, c, 8, nullptr), bad},
        {"rms_norm_strided w null", cuda::rms_norm_strided(a, 8, nullptr, 8, 2, 1e-5f, c, 8, nullptr), bad},
        {"rms_norm_strided out null", cuda::rms_norm_strided(a, 8, b, 8, 2, 1e-5f, nullptr, 8, nullptr), bad},
        {"rms_norm_strided n < 0", cuda::rms_norm_strided(a, 8, b, -1, 2, 1e-5f, c, 8, nullptr), bad},
        {"rms_norm_strided n_rows < 0", cuda::rms_norm_strided(a, 8, b, 8, -2, 1e-5f, c, 8, nullptr), bad},
        {"rms_norm_strided x_stride < n", cuda::rms_norm_strided(a, 7, b, 8, 2, 1e-5f, c, 8, nullptr), bad},
        {"rms_norm_strided out_stride < n", cuda::rms_norm_strided(a, 8, b, 8, 2, 1e-5f, c, 7, nullptr), bad},
        {"rms_norm_strided in place, other stride", cuda::rms_norm_strided(a, 8, b, 8, 2, 1e-5f, a, 9, nullptr), bad},
        {"rms_norm_strided no rows", cuda::rms_norm_strided(a, 8, b, 8, 0, 1e-5f, c, 8, nullptr), ok},
        {"rms_norm_strided n 0", cuda::rms_norm_strided(a, 8, b, 0, 2, 1e-5f, c, 8, nullptr), ok},
        {"ffn_activate gate null", cuda::ffn_activate(nullptr, b, 8, 0.0f, 0.0f, nullptr), bad},
        {"ffn_activate up null", cuda::ffn_activate(a, nullptr, 8, 3.0f, 0.0f, nullptr), bad},
        {"ffn_activate beta NaN", cuda::ffn_activate(a, b, 8, NAN, 0.0f, nullptr), bad},
        {"ffn_activate empty", cuda::ffn_activate(a, b, 0, 3.0f, 2.0f, nullptr), ok},
        {"mul_sigmoid x null", cuda::mul_sigmoid(nullptr, b, 8, nullptr), bad},
        {"mul_sigmoid g null", cuda::mul_sigmoid(a, nullptr, 8, nullptr), bad},
        {"mul_sigmoid empty", cuda::mul_sigmoid(a, b, 0, nullptr), ok},
        {"gather_heads src null", cuda::gather_heads(nullptr, 2, 3, 40, 10, 2, 8, c, nullptr), bad},
        {"gather_heads dst null", cuda::gather_heads(a, 2, 3, 40, 10, 2, 8, nullptr, nullptr), bad},
        {"gather_heads n_tokens < 0", cuda::gather_heads(a, -2, 3, 40, 10, 2, 8, c, nullptr), bad},
        {"gather_heads n_heads < 0", cuda::gather_heads(a, 2, -3, 40, 10, 2, 8, c, nullptr), bad},
        {"gather_heads width < 0", cuda::gather_heads(a, 2, 3, 40, 10, 2, -8, c, nullptr), bad},
        {"gather_heads token_stride < 0", cuda::gather_heads(a, 2, 3, -40, 10, 2, 8, c, nullptr), bad},
        {"gather_heads head_stride < 0", cuda::gather_heads(a, 2, 3, 40, -10, 2, 8, c, nullptr), bad},
        {"gather_heads offset < 0", cuda::gather_heads(a, 2, 3, 40, 10, -2, 8, c, nullptr), bad},
        {"gather_heads empty", cuda::gather_heads(a, 0, 3, 40, 10, 2, 8, c, nullptr), ok},
        {"scatter_heads src null", cuda::scatter_heads(nullptr, 2, 3, 8, c, nullptr), bad},
        {"scatter_heads dst null", cuda::scatter_heads(a, 2, 3, 8, nullptr, nullptr), bad},
        {"scatter_heads n_heads < 0", cuda::scatter_heads(a, 2, -3, 8, c, nullptr), bad},
        {"scatter_heads empty", cuda::scatter_heads(a, 2, 3, 0, c, nullptr), ok},
        {"attn_res_mix x null", cuda::attn_res_mix(nullptr, b, 2, 20, c, 2, 8, 1e-5f, fake + 900, nullptr), bad},
        {"attn_res_mix w null", cuda::attn_res_mix(a, b, 2, 20, nullptr, 2, 8, 1e-5f, fake + 900, nullptr), bad},
        {"attn_res_mix out null", cuda::attn_res_mix(a, b, 2, 20, c, 2, 8, 1e-5f, nullptr, nullptr), bad},
        {"attn_res_mix bank null", cuda::attn_res_mix(a, nullptr, 2, 20, c, 2, 8, 1e-5f, fake + 900, nullptr), bad},
        {"attn_res_mix n_bank < 0", cuda::attn_res_mix(a, b, -1, 20, c, 2, 8, 1e-5f, fake + 900, nullptr), bad},
        {"attn_res_mix n_bank 64", cuda::attn_res_mix(a, b, 64, 64 * 8, c, 2, 8, 1e-5f, fake + 900, nullptr), bad},
        {"attn_res_mix bank_stride < n_bank*E", cuda::attn_res_mix(a, b, 2, 15, c, 2, 8, 1e-5f, fake + 900, nullptr), bad},
        {"attn_res_mix E < 0", cuda::attn_res_mix(a, b, 2, 20, c, 2, -8, 1e-5f, fake + 900, nullptr), bad},
        {"attn_res_mix out overlaps x", cuda::attn_res_mix(a, b, 2, 20, c, 2, 8, 1e-5f, a + 15, nullptr), bad},
        {"attn_res_mix out overlaps bank", cuda::attn_res_mix(a, b, 2, 20, c, 2, 8, 1e-5f, b + 30, nullptr), bad},
        {"attn_res_mix no bank, bank null", cuda::attn_res_mix(a, nullptr, 0, 0, c, 0, 8, 1e-5f, fake + 900, nullptr), ok},
        {"attn_res_mix no tokens", cuda::attn_res_mix(a, b, 2, 20, c, 0, 8, 1e-5f, fake + 900, nullptr), ok},
        {"gather_rows src null", cuda::gather_rows(nullptr, ids, 3, 8, c, nullptr), bad},
        {"gather_rows rows null", cuda::gather_rows(a, nullptr, 3, 8, c, nullptr), bad},
        {"gather_rows dst null", cuda::gather_rows(a, ids, 3, 8, nullptr, nullptr), bad},
        {"gather_rows n_rows < 0", cuda::gather_rows(a, ids, -3, 8, c, nullptr), bad},
        {"gather_rows width < 0", cuda::gather_rows(a, ids, 3, -8, c, nullptr), bad},
        {"gather_rows empty", cuda::gather_rows(a, ids, 0, 8, c, nullptr), ok},
        {"moe_combine src null", cuda::moe_combine(nullptr, ids, b, 2, 4, 8, c, nullptr), bad},
        {"moe_combine rows null", cuda::moe_combine(a, nullptr, b, 2, 4, 8, c, nullptr), bad},
        {"moe_combine weights null", cuda::moe_combine(a, ids, nullptr, 2, 4, 8, c, nullptr), bad},
        {"moe_combine out null", cuda::moe_combine(a, ids, b, 2, 4, 8, nullptr, nullptr), bad},
        {"moe_combine k < 0", cuda::moe_combine(a, ids, b, 2, -4, 8, c, nullptr), bad},
        {"moe_combine n_tokens < 0", cuda::moe_combine(a, ids, b, -2, 4, 8, c, nullptr), bad},
        {"moe_combine empty", cuda::moe_combine(a, ids, b, 0, 4, 8, c, nullptr), ok},
    };
    int wrong = 0;
    for (const Check& k : checks)
        if (k.got != k.want) {
            ++wrong;
            std::printf("  %s: got %s, want %s\n", k.what, cudaGetErrorName(k.got), cudaGetErrorName(k.want));
        }
    char detail[96];
    std::snprintf(detail, sizeof detail, "%d of %zu calls answered wrongly", wrong, std::size(checks));
    report(wrong == 0, "bad arguments refused, empty inputs accepted", detail);
}

// ---- rms_norm_strided ---------------------------------------------------------------------------

void test_rms_norm_strided(bool small) {
    struct Case {
        int64_t n;
        int rows;
        int64_t x_pad, out_pad;
    };
    const std::vector<Case> cases = small ? std::vector<Case>{{577, 3, 64, 5}, {33, 2, 1, 0}, {1, 2, 3, 2}}
                                          : std::vector<Case>{{512, 9, 64, 0},   // MLA latent, rope key after it
                                                              {4099, 7, 13, 5},
                                                              {7168, 3, 0, 1},
                                                              {33, 5, 31, 2},
                                                              {1, 4, 2, 0}};
    const float eps = 1e-6f;
    for (const Case& c : cases) {
        const int64_t xs = c.n + c.x_pad, os = c.n + c.out_pad;
        const auto x = normal(size_t(xs * c.rows), 2.0f, 0.3f), w = normal(size_t(c.n));
        const auto out0 = normal(size_t(os * c.rows), 5.0f);  // values past n must stay these
        auto want = out0, want_in_place = x;  // past n: as they were
        for (int r = 0; r < c.rows; ++r) {
            exec::rms_norm(&x[size_t(r * xs)], w.data(), c.n, double(eps), &want[size_t(r * os)]);
            exec::rms_norm(&x[size_t(r * xs)], w.data(), c.n, double(eps), &want_in_place[size_t(r * xs)]);
        }
        // Poison the values the kernel must write, keep the rest.
        auto out_init = out0;
        for (int r = 0; r < c.rows; ++r) std::fill_n(&out_init[size_t(r * os)], c.n, NAN);

        float* dx = upload(x);
        float* dw = upload(w);
        float* dout = upload(out_init);
        cudaError_t e = cuda::rms_norm_strided(dx, xs, dw, c.n, c.rows, eps, dout, os, nullptr);
        const auto got = download(dout, out0.size());
        const auto x_after = download(dx, x.size());
        cudaError_t e2 = cuda::rms_norm_strided(dx, xs, dw, c.n, c.rows, eps, dx, xs, nullptr);
        const auto got_in_place = download(dx, x.size());

        // Split each result into the normed values (compared within tolerance) and the rest (exact).
        std::vector<float> normed, normed_want, normed_ip, normed_ip_want;
        size_t tail_changed = count_differing_bits(x_after.data(), x.data(), x.size());  // input untouched
        for (int r = 0; r < c.rows; ++r) {
            for (int64_t i = 0; i < os; ++i) {
                const size_t k = size_t(r * os + i);
                if (i < c.n) normed.push_back(got[k]), normed_want.push_back(want[k]);
                else tail_changed += count_differing_bits(&got[k], &want[k], 1);
            }
            for (int64_t i = 0; i < xs; ++i) {
                const size_t k = size_t(r * xs + i);
                if (i < c.n) normed_ip.push_back(got_in_place[k]), normed_ip_want.push_back(want_in_place[k]);
                else tail_changed += count_differing_bits(&got_in_place[k], &x[k], 1);
            }
        }
        const double err = max_rel_error(normed, normed_want), err_ip = max_rel_error(normed_ip, normed_ip_want);
        char what[64], detail[160];
        std::snprintf(what, sizeof what, "rms_norm_strided n %lld", (long long)c.n);
        std::snprintf(detail, sizeof detail,
                      "%d rows, strides %lld/%lld: max rel err %.3g, in place %.3g (tol 3e-7); %zu values past n "
                      "or of the input changed (want 0)",
                      c.rows, (long long)xs, (long long)os, err, err_ip, tail_changed);
        report(e == cudaSuccess && e2 == cudaSuccess && err <= 3e-7 && err_ip <= 3e-7 && tail_changed == 0, what,
               detail);
        cudaFree(dx), cudaFree(dw), cudaFree(dout);
    }
}

// ---- ffn_activate, mul_sigmoid ----------------------------------------------------------------

// exec::Context::activate's SiTU branch.
void situ_reference(float* gate, const float* up, size_t n, float b, float l) {
    for (size_t i = 0; i < n; ++i) {
        const float g = gate[i];
        const float u = l > 0.0f ? l * std::tanh(up[i] / l) : up[i];
        gate[i] = b * std::tanh(g / b) / (1.0f + std::exp(-g)) * u;
    }
}

void test_ffn_activate(bool small) {
    const size_t n = small ? 1001 : 100003;
    const float configs[][2] = {{0.0f, 0.0f}, {-1.0f, 3.0f}, {3.0f, 0.0f}, {3.0f, 4.0f}, {0.5f, 0.25f}};
    for (const auto& cfg : configs) {
        const float beta = cfg[0], lin = cfg[1];
        const auto gate = normal(n, 3.0f), up = normal(n, 2.0f);
        auto want = gate;
        if (beta <= 0.0f) exec::swiglu(want.data(), up.data(), int64_t(n));
        else situ_reference(want.data(), up.data(), n, beta, lin);
        float* dg = upload(gate);
        float* du = upload(up);
        const cudaError_t e = cuda::ffn_activate(dg, du, n, beta, lin, nullptr);
        const double err = max_rel_error(download(dg, n), want);
        const double tol = beta <= 0.0f ? 1e-6 : 3e-6;
        char what[64], detail[96];
        std::snprintf(what, sizeof what, "ffn_activate %s b %g l %g", beta <= 0.0f ? "SwiGLU" : "SiTU", beta, lin);
        std::snprintf(detail, sizeof detail, "n %zu: max rel err %.3g (tol %.0e)", n, err, tol);
        report(e == cudaSuccess && err <= tol, what, detail);
        cudaFree(dg), cudaFree(du);
    }
}

void test_mul_sigmoid(bool small) {
    const size_t n = small ? 999 : 70001;
    const auto x = normal(n, 2.0f), g = normal(n, 4.0f);
    auto want = x;
    for (size_t i = 0; i < n; ++i) want[i] *= 1.0f / (1.0f + std::exp(-g[i]));  // context_mla.cpp's gate
    float* dx = upload(x);
    float* dg = upload(g);
    const cudaError_t e = cuda::mul_sigmoid(dx, dg, n, nullptr);
    const double err = max_rel_error(download(dx, n), want);
    char detail[96];
    std::snprintf(detail, sizeof detail, "n %zu: max rel err %.3g (tol 1e-6)", n, err);
    report(e == cudaSuccess && err <= 1e-6, "mul_sigmoid", detail);
    cudaFree(dx), cudaFree(dg);
}

// ---- head gathers, row gathers, MoE combine (exact) ------------------------------------------

void test_gather_scatter_heads(bool small) {
    struct Case {
        const char* name;
        int n_tokens, n_heads;
        int64_t head_stride, offset, width, token_pad;
    };
    const Case cases[] = {{"gather_heads nope part", 5, 7, 77, 0, 58, 3},
                          {"gather_heads rope part", 5, 7, 77, 58, 19, 3},
                          {"gather_heads shared head (stride 0)", 4, 6, 0, 13, 37, 11},
                          {"gather_heads one value", 3, 2, 5, 4, 1, 0}};
    for (const Case& c : cases) {
        const int n_tokens = small ? 2 : c.n_tokens;
        const int64_t token_stride = std::max(int64_t(c.n_heads) * c.head_stride, c.offset + c.width) + c.token_pad;
        const size_t src_len = size_t((n_tokens - 1) * token_stride + (c.n_heads - 1) * c.head_stride + c.offset + c.width);
        const auto src = normal(src_len);
        const size_t n_out = size_t(n_tokens) * size_t(c.n_heads) * size_t(c.width);
        std::vector<float> want(n_out);
        for (int h = 0; h < c.n_heads; ++h)
            for (int t = 0; t < n_tokens; ++t)
                for (int64_t i = 0; i < c.width; ++i)
                    want[size_t((int64_t(h) * n_tokens + t) * c.width + i)] =
                        src[size_t(t * token_stride + h * c.head_stride + c.offset + i)];
        float* dsrc = upload(src);
        float* ddst = upload(nan_vector(n_out));
        const cudaError_t e =
            cuda::gather_heads(dsrc, n_tokens, c.n_heads, token_stride, c.head_stride, c.offset, c.width, ddst, nullptr);
        const auto got = download(ddst, n_out);
        const size_t bad = count_differing_bits(got.data(), want.data(), n_out);
        char detail[128];
        std::snprintf(detail, sizeof detail, "%d tokens x %d heads x %lld: %zu values differ (exact)", n_tokens,
                      c.n_heads, (long long)c.width, bad);
        report(e == cudaSuccess && bad == 0, c.name, detail);

        // scatter_heads undoes it for a contiguous row: [t][h][i] from [h][t][i].
        std::vector<float> want_rows(n_out);
        for (int t = 0; t < n_tokens; ++t)
            for (int h = 0; h < c.n_heads; ++h)
                for (int64_t i = 0; i < c.width; ++i)
                    want_rows[size_t((int64_t(t) * c.n_heads + h) * c.width + i)] =
                        got[size_t((int64_t(h) * n_tokens + t) * c.width + i)];
        float* drows = upload(nan_vector(n_out));
        const cudaError_t e2 = cuda::scatter_heads(ddst, n_tokens, c.n_heads, c.width, drows, nullptr);
        const size_t bad2 = count_differing_bits(download(drows, n_out).data(), want_rows.data(), n_out);
        std::snprintf(detail, sizeof detail, "%d tokens x %d heads x %lld: %zu values differ (exact)", n_tokens,
                      c.n_heads, (long long)c.width, bad2);
        report(e2 == cudaSuccess && bad2 == 0, "scatter_heads (its inverse)", detail);
        cudaFree(dsrc), cudaFree(ddst), cudaFree(drows);
    }
}

void test_gather_rows(bool small) {
    const int n_src = 23, n_rows = small ? 9 : 41;
    for (const int64_t width : {small ? int64_t(33) : int64_t(1001), int64_t(7)}) {
        const auto src = normal(size_t(n_src * width));
        std::vector<int32_t> rows(static_cast<size_t>(n_rows));
        for (auto& r : rows) r = uniform_int(0, n_src - 1);
        rows[0] = n_src - 1;
        rows[1] = rows[2];  // a repeat
        rows.back() = -1;   // a bad index: a NaN row
        std::vector<float> want(size_t(n_rows * width));
        for (int r = 0; r + 1 < n_rows; ++r)
            std::copy_n(&src[size_t(rows[size_t(r)] * width)], width, &want[size_t(r * width)]);
        float* dsrc = upload(src);
        int32_t* drows = upload(rows);
        float* ddst = upload(std::vector<float>(want.size(), 12345.0f));
        const cudaError_t e = cuda::gather_rows(dsrc, drows, n_rows, width, ddst, nullptr);
        const auto got = download(ddst, want.size());
        const size_t good_len = size_t((n_rows - 1) * width);
        const size_t bad = count_differing_bits(got.data(), want.data(), good_len);
        const bool nan_row = std::all_of(got.begin() + ptrdiff_t(good_len), got.end(), [](float v) { return std::isnan(v); });
        char detail[128];
        std::snprintf(detail, sizeof detail, "%d rows of %lld: %zu values differ (exact); row -1 -> NaN: %s", n_rows,
                      (long long)width, bad, nan_row ? "yes" : "NO");
        report(e == cudaSuccess && bad == 0 && nan_row, "gather_rows", detail);
        cudaFree(dsrc), cudaFree(drows), cudaFree(ddst);
    }
}

// The combine loop of exec::Context::ffn_moe, slots already in summation order.
std::vector<float> moe_combine_reference(const std::vector<float>& src, const std::vector<int32_t>& rows,
                                         const std::vector<float>& weights, int n_tokens, int k, int64_t width) {
    std::vector<float> out(size_t(n_tokens * width), 0.0f);
    for (int t = 0; t < n_tokens; ++t)
        for (int i = 0; i < k; ++i) {
            const float* d = &src[size_t(rows[size_t(t * k + i)] * width)];
            const float w = weights[size_t(t * k + i)];
            for (int64_t c = 0; c < width; ++c) out[size_t(t * width + c)] += w * d[c];
        }
    return out;
}

void test_moe_combine(bool small) {
    const int n_tokens = small ? 3 : 6;
    const int64_t width = small ? 33 : 577;
    const std::vector<int> ks = small ? std::vector<int>{1, 3, 8} : std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8};
    for (const int k : ks) {
        const int n_src = n_tokens * k + 3;  // as many rows as slots, and a few nobody chose
        const auto src = normal(size_t(n_src) * size_t(width), 1.5f);
        std::vector<int32_t> rows(size_t(n_tokens * k));
        std::vector<float> weights(rows.size());
        for (auto& r : rows) r = uniform_int(0, n_src - 1);
        for (auto& w : weights) w = float(rng() % 1000000 + 1) * 1e-6f;
        const auto want = moe_combine_reference(src, rows, weights, n_tokens, k, width);
        float* dsrc = upload(src);
        int32_t* drows = upload(rows);
        float* dw = upload(weights);
        float* dout = upload(nan_vector(want.size()));
        const cudaError_t e = cuda::moe_combine(dsrc, drows, dw, n_tokens, k, width, dout, nullptr);
        const size_t bad = count_differing_bits(download(dout, want.size()).data(), want.data(), want.size());
        char what[64], detail[96];
        std::snprintf(what, sizeof what, "moe_combine k %d", k);
        std::snprintf(detail, sizeof detail, "%d tokens x %lld: %zu values differ (exact)", n_tokens, (long long)width, bad);
        report(e == cudaSuccess && bad == 0, what, detail);
        cudaFree(dsrc), cudaFree(drows), cudaFree(dw), cudaFree(dout);
    }
    // k == 0: a sum over nothing, all zeros.
    float* dout = upload(nan_vector(size_t(n_tokens * width)));
    const cudaError_t e = cuda::moe_combine(nullptr, nullptr, nullptr, n_tokens, 0, width, dout, nullptr);
    const auto got = download(dout, size_t(n_tokens * width));
    const bool zeros = std::all_of(got.begin(), got.end(), [](float v) { return v == 0.0f; });
    report(e == cudaSuccess && zeros, "moe_combine k 0", zeros ? "all zeros" : "NOT all zeros");
    cudaFree(dout);
}

// ---- attn_res_mix -------------------------------------------------------------------------------

// exec::Context::attn_res_mix for one token; also the scale sum_j s_j |e_j[c]| of each output.
void attn_res_reference(const float* xt, const float* bank, int n_bank, const float* w, int64_t E, double eps,
                        float* out, double* scale) {
    std::vector<float> score(size_t(n_bank + 1));
    auto rms_dot = [&](const float* v) {
        double ss = 0.0, dot = 0.0;
        for (int64_t c = 0; c < E; ++c) {
            ss += double(v[c]) * double(v[c]);
            dot += double(v[c]) * double(w[c]);
        }
        return float(dot / std::sqrt(ss / double(E) + eps));
    };
    for (int j = 0; j < n_bank; ++j) score[size_t(j)] = rms_dot(bank + j * E);
    score[size_t(n_bank)] = rms_dot(xt);
    exec::softmax(score.data(), n_bank + 1);
    for (int64_t c = 0; c < E; ++c) {
        out[c] = score[size_t(n_bank)] * xt[c];
        scale[c] = double(score[size_t(n_bank)]) * std::fabs(double(xt[c]));
    }
    for (int j = 0; j < n_bank; ++j)
        for (int64_t c = 0; c < E; ++c) {
            out[c] += score[size_t(j)] * bank[j * E + c];
            scale[c] += double(score[size_t(j)]) * std::fabs(double(bank[j * E + c]));
        }
}

void test_attn_res_mix(bool small) {
    const int n_tokens = small ? 2 : 5, max_bank = 4;
    const float eps = 1e-5f;
    const std::vector<int64_t> widths = small ? std::vector<int64_t>{33, 577} : std::vector<int64_t>{4099, 577, 33};
    for (const int64_t E : widths)
        for (int n_bank = 0; n_bank <= 3; ++n_bank) {
            const int64_t bank_stride = max_bank * E + 7;  // room for more entries than are banked
            // Entries of unlike scales and offsets; w scaled so that scores are O(1) and the
            // softmax is neither uniform nor one-hot.
            const auto x = normal(size_t(n_tokens * E), 1.5f, 0.1f);
            std::vector<float> bank(size_t(n_tokens * bank_stride));
            for (int t = 0; t < n_tokens; ++t)
                for (int j = 0; j < max_bank; ++j) {
                    const auto e = normal(size_t(E), 0.5f + float(j), 0.05f * float(j));
                    std::copy(e.begin(), e.end(), bank.begin() + ptrdiff_t(t * bank_stride + j * E));
                }
            const auto w = normal(size_t(E), 2.0f / std::sqrt(float(E)), 0.3f / std::sqrt(float(E)));
            std::vector<float> want(x.size());
            std::vector<double> scale(x.size());
            for (int t = 0; t < n_tokens; ++t)
                attn_res_reference(&x[size_t(t * E)], &bank[size_t(t * bank_stride)], n_bank, w.data(), E, double(eps),
                                   &want[size_t(t * E)], &scale[size_t(t * E)]);
            float* dx = upload(x);
            float* db = upload(bank);
            float* dw = upload(w);
            float* dout = upload(nan_vector(x.size()));
            const cudaError_t e = cuda::attn_res_mix(dx, db, n_bank, bank_stride, dw, n_tokens, E, eps, dout, nullptr);
            const auto got = download(dout, x.size());
            double worst = 0.0;
            for (size_t i = 0; i < got.size(); ++i) {
                const double r = std::fabs(double(got[i]) - double(want[i])) / scale[i];
                worst = std::isnan(r) ? INFINITY : std::max(worst, r);
            }
            char what[64], detail[128];
            std::snprintf(what, sizeof what, "attn_res_mix E %lld n_bank %d", (long long)E, n_bank);
            std::snprintf(detail, sizeof detail, "%d tokens: max err / sum s|e| %.3g (tol 1e-5)", n_tokens, worst);
            report(e == cudaSuccess && worst <= 1e-5, what, detail);
            cudaFree(dx), cudaFree(db), cudaFree(dw), cudaFree(dout);
        }
}

}  // namespace

int main() {
    test_arguments();  // launches nothing: runs without a GPU too
    if (const int rc = cuda_test::start("cuda model ops")) return rc;
    const bool small = cuda_test::small_sizes();
    test_rms_norm_strided(small);
    test_ffn_activate(small);
    test_mul_sigmoid(small);
    test_gather_scatter_heads(small);
    test_gather_rows(small);
    test_moe_combine(small);
    test_attn_res_mix(small);
    const cudaError_t e = cudaDeviceSynchronize();
    cuda_test::expect(e == cudaSuccess, std::string("device error: ") + cudaGetErrorString(e));
    return cuda_test::finish("cuda model ops");
}
