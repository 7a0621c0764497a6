// The deepseek2 decode kernels against host references on fresh random data (outputs poisoned
// before each run): GPU routing = the host route_token (the same shared code); the grouped IQ1_S
// expert products = the CPU's bit for bit (the host's Q8_K quantizer and IQ1_S x Q8_K kernel per
// row, in each float order: scalar, AVX2 (the real kernel on an AVX2 host, else a portable
// emulation checked against it where it can be), and the host's best; the down sum in ascending
// expert order, rounded as the CPU rounds it) for 1, 8 and 16 chosen experts; the MLA cache store
// = the CPU's f16 rounding bit for bit, multi-token causal MLA attention = a float64 host softmax
// over the same f16 cache rows. Ragged sizes (rows not a multiple of a block's warps, a cache
// length that is not a multiple of the tile). The MoE and MLA argument checks launch nothing and
// run first, also without a GPU; then exit 77 (ctest: skipped) with a printed reason when no GPU
// is present.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.cuh"
#include "kernels/products/gemv.cuh"
#include "kernels/attention/mla_attention.cuh"
#include "kernels/moe/moe.cuh"
#include "quant/half.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/dot/iq1s_dot.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant/type_ids.hpp"

using namespace strata;
using namespace strata::cuda_test;  // the test programs' helpers

namespace {

// Random bytes (every grid index, scale code and sign reachable) and d = +-10^U(-3,0) as f16.
std::vector<quant::block_iq1_s> random_blocks(size_t n) {
    std::vector<quant::block_iq1_s> b(n);
    std::vector<uint8_t> bytes(n * sizeof(quant::block_iq1_s));
    for (auto& x : bytes) x = uint8_t(rng());
    std::memcpy(b.data(), bytes.data(), bytes.size());
    std::uniform_real_distribution<float> exponent(-3.0f, 0.0f);
    for (auto& blk : b) blk.d = quant::f32_to_f16(std::pow(10.0f, exponent(rng)) * ((rng() & 1) ? -1.0f : 1.0f));
    return b;
}

// The host's Q8_K rows of x [n_rows][cols].
std::vector<quant::block_q8_K> host_q8k(const std::vector<float>& x, int64_t cols, int n_rows) {
    std::vector<quant::block_q8_K> q(size_t(n_rows) * size_t(cols / quant::kQK_K));
    for (int t = 0; t < n_rows; ++t)
        quant::quantize_row_q8_k(&x[size_t(t) * size_t(cols)], &q[size_t(t) * size_t(cols / quant::kQK_K)], cols);
    return q;
}

bool host_has_avx2_kernel() { return quant::resolve_iq1s_kernel(quant::Iq1sKernel::best) == quant::Iq1sKernel::avx2; }

// The AVX2 kernel's float steps over the scalar lane integers (quant/dot/iq1s_dot.hpp), for hosts
// without AVX2: eight fma accumulators, one for sumi1, ggml's horizontal sum.
float avx2_order_dot(int64_t n, const quant::block_iq1_s* x, const quant::block_q8_K* y) {
    float acc[8] = {}, acc1 = 0.0f;
    for (int64_t b = 0; b < n / quant::kQK_K; ++b) {
        const quant::Iq1sLaneSums s = quant::iq1s_lane_sums_scalar(x[b], y[b]);
        const float d = y[b].d * quant::f16_to_f32(x[b].d);
        for (int k = 0; k < 8; ++k) acc[k] = std::fma(d, float(s.lane[k]), acc[k]);
        acc1 = std::fma(d, float(s.sumi1), acc1);
    }
    const float h = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    return h + quant::kIq1sDelta * acc1;  // the product is exact: contracted or not, the same float
}

// What the CPU computes for one row with the kernel `order` names.
float cpu_dot(quant::Iq1sKernel order, int64_t n, const quant::block_iq1_s* x, const quant::block_q8_K* y) {
    switch (order) {
    case quant::Iq1sKernel::scalar: return quant::vec_dot_iq1s_q8k_scalar(n, x, y);
    case quant::Iq1sKernel::avx2:
#if defined(__x86_64__)
        if (host_has_avx2_kernel()) return quant::vec_dot_iq1s_q8k_avx2(n, x, y);
#endif
        return avx2_order_dot(n, x, y);
    case quant::Iq1sKernel::simd:  // the scalar kernel's bits
    case quant::Iq1sKernel::best: break;
    }
    return quant::vec_dot_iq1s_q8k(n, x, y);
}

// Count of floats whose bits differ, and the largest difference (NaN counts as infinite).
struct BitDiff {
    size_t differing = 0;
    double max_abs = 0.0;
};

BitDiff bit_diff(const std::vector<float>& got, const std::vector<float>& want) {
    BitDiff r;
    for (size_t i = 0; i < got.size(); ++i) {
        if (std::memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
        ++r.differing;
        const double d = std::fabs(double(got[i]) - double(want[i]));
        r.max_abs = std::isnan(d) ? INFINITY : std::max(r.max_abs, d);
    }
    return r;
}

void report_bits(const BitDiff& d, bool launched, const std::string& what, size_t n) {
    report(launched && d.differing == 0 && n > 0, what,
           std::to_string(d.differing) + " of " + std::to_string(n) + " differ, max |diff| " + std::to_string(d.max_abs) +
               " (bound: bit-identical)");
}

void test_route() {
    exec::MoeRoute r;
    r.n_expert = 64;
    r.n_used = 6;
    r.n_group = 8;
    r.n_group_used = 3;
    r.sigmoid = 1;
    r.norm = 1;
    r.scale = 2.5f;
    const int n_tokens = 37;
    const auto logits = normal(size_t(n_tokens) * 64), bias = normal(64, 0.1f);
    float* d_logits = upload(logits);
    float* d_bias = upload(bias);
    void* ws = nullptr;
    cudaMalloc(&ws, cuda::moe_route_workspace_bytes(r, n_tokens));
    std::vector<int32_t> poison_i(size_t(n_tokens) * 6, -7);
    std::vector<float> poison_f(size_t(n_tokens) * 6, -7.0f);
    int32_t* d_chosen = upload(poison_i);
    float* d_w = upload(poison_f);
    const cudaError_t e = cuda::moe_route(d_logits, d_bias, r, n_tokens, ws, d_chosen, d_w, nullptr, nullptr);
    const auto chosen = download(d_chosen, poison_i.size());
    const auto w = download(d_w, poison_f.size());
    std::vector<float> probs(64), sel(64), gs(8);
    std::vector<uint8_t> st(64), gst(8);
    int mismatched = 0;
    double err = 0.0;
    for (int t = 0; t < n_tokens; ++t) {
        int32_t c[6];
        float wt[6];
        const float margin = exec::route_token(&logits[size_t(t) * 64], bias.data(), r, probs.data(), sel.data(), st.data(),
                                               gs.data(), gst.data(), c, wt);
        if (margin < 1e-5f) continue;  // device expf may differ by an ulp: only clear choices are judged
        for (int i = 0; i < 6; ++i) {
            mismatched += chosen[size_t(t) * 6 + i] != c[i];
            err = std::max(err, double(std::fabs(w[size_t(t) * 6 + i] - wt[i])));
        }
    }
    report(e == cudaSuccess && mismatched == 0 && err < 1e-5, "moe_route (grouped, sigmoid, bias)", err, 1e-5);
    cudaFree(d_logits), cudaFree(d_bias), cudaFree(ws), cudaFree(d_chosen), cudaFree(d_w);
}

// One token's expert products against the CPU's: the input and the activated rows quantized on
// the device (their Q8_K bytes equal to the host quantizer's), gate/up rows bit-identical to the
// host kernel's dot per row, and the down sums bit-identical to out = 0, out += w_i * dot_i over
// the slots in ascending expert id (the slots come in random, not sorted, id order). Ragged row
// counts (not a multiple of a block's 8 warps).
void test_gate_up_down(int n_sel, quant::Iq1sKernel order) {
    const bool small = cuda_test::small_sizes();
    const int64_t n_expert = 24, cols = small ? 512 : 1792, rows = small ? 37 : 203;
    const int64_t down_cols = small ? 256 : 768, down_rows = small ? 45 : 300;
    const int64_t nb = cols / 256, nbd = down_cols / 256;
    const auto gate = random_blocks(size_t(n_expert * rows * nb));
    const auto up = random_blocks(gate.size());
    const auto down = random_blocks(size_t(n_expert * down_rows * nbd));
    const auto x = normal(size_t(cols));
    const auto h = normal(size_t(n_sel) * size_t(down_cols), 0.5f);
    std::vector<int32_t> ids(static_cast<size_t>(n_expert));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    const std::vector<int32_t> chosen(ids.begin(), ids.begin() + n_sel);  // distinct, unsorted
    std::vector<float> weights(static_cast<size_t>(n_sel));
    std::uniform_real_distribution<float> wd(0.01f, 1.0f);
    for (auto& w : weights) w = wd(rng);

    auto* d_gate = upload(gate);
    auto* d_up = upload(up);
    auto* d_down = upload(down);
    auto* d_x = upload(x);
    auto* d_h = upload(h);
    auto* d_chosen = upload(chosen);
    auto* d_w = upload(weights);
    const size_t x_bytes = cuda::gemv_act_bytes(quant::kTypeIQ1_S, cols, 1);
    const size_t h_bytes = cuda::gemv_act_bytes(quant::kTypeIQ1_S, down_cols, n_sel);
    std::vector<uint8_t> poison_bytes(std::max(x_bytes, h_bytes), 0xa5);
    auto* d_xq = upload(std::vector<uint8_t>(poison_bytes.begin(), poison_bytes.begin() + long(x_bytes)));
    auto* d_hq = upload(std::vector<uint8_t>(poison_bytes.begin(), poison_bytes.begin() + long(h_bytes)));
    std::vector<float> poison(size_t(n_sel * rows), NAN), poison_down(size_t(down_rows), NAN);
    float* d_g = upload(poison);
    float* d_u = upload(poison);
    float* d_o = upload(poison_down);
    const cuda::Iq1sStack G{d_gate, cols, rows, n_expert}, U{d_up, cols, rows, n_expert},
        D{d_down, down_cols, down_rows, n_expert};
    cudaError_t e = cuda::quantize_activations(quant::kTypeIQ1_S, d_x, cols, 1, d_xq, nullptr);
    if (e == cudaSuccess) e = cuda::quantize_activations(quant::kTypeIQ1_S, d_h, down_cols, n_sel, d_hq, nullptr);
    if (e == cudaSuccess) e = cuda::moe_gate_up_iq1s(G, U, d_xq, d_chosen, n_sel, order, d_g, d_u, nullptr);
    if (e == cudaSuccess) e = cuda::moe_down_iq1s(D, d_hq, d_chosen, d_w, n_sel, order, d_o, nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    const bool launched = e == cudaSuccess;
    const auto g = download(d_g, poison.size()), u = download(d_u, poison.size()), o = download(d_o, poison_down.size());
    const auto xq_dev = download(d_xq, x_bytes), hq_dev = download(d_hq, h_bytes);

    // The host's side: its quantizer, its kernel's dot per row, its combine.
    const auto xq = host_q8k(x, cols, 1), hq = host_q8k(h, down_cols, n_sel);
    const bool act_same = std::memcmp(xq_dev.data(), xq.data(), x_bytes) == 0 &&
                          std::memcmp(hq_dev.data(), hq.data(), h_bytes) == 0;
    std::vector<float> want_g(poison.size()), want_u(poison.size()), want_o(poison_down.size());
    for (int i = 0; i < n_sel; ++i)
        for (int64_t r = 0; r < rows; ++r) {
            const size_t row = size_t((chosen[size_t(i)] * rows + r) * nb), at = size_t(i * rows + r);
            want_g[at] = cpu_dot(order, cols, &gate[row], xq.data());
            want_u[at] = cpu_dot(order, cols, &up[row], xq.data());
        }
    std::vector<int> ascending(static_cast<size_t>(n_sel));
    std::iota(ascending.begin(), ascending.end(), 0);
    std::sort(ascending.begin(), ascending.end(), [&](int a, int b) { return chosen[size_t(a)] < chosen[size_t(b)]; });
    for (int64_t r = 0; r < down_rows; ++r) {
        float acc = 0.0f;
        for (const int i : ascending) {
            const size_t row = size_t((chosen[size_t(i)] * down_rows + r) * nbd);
            // Rounded apart, as the CPU (built with -ffp-contract=off) rounds them.
            const volatile float product = weights[size_t(i)] * cpu_dot(order, down_cols, &down[row], &hq[size_t(i) * size_t(nbd)]);
            acc = acc + product;
        }
        want_o[size_t(r)] = acc;
    }

    const std::string tag = std::string(" n_sel ") + std::to_string(n_sel) + " of " + std::to_string(n_expert) + ", " +
                            quant::iq1s_kernel_name(order) + " order";
    report(launched && act_same, "moe Q8_K activations (input and rows)" + tag,
           act_same ? "bytes equal to quantize_row_q8_k" : "bytes differ from quantize_row_q8_k");
    BitDiff gu = bit_diff(g, want_g);
    const BitDiff ud = bit_diff(u, want_u);
    gu.differing += ud.differing;
    gu.max_abs = std::max(gu.max_abs, ud.max_abs);
    report_bits(gu, launched, "moe_gate_up_iq1s" + tag, g.size() + u.size());
    report_bits(bit_diff(o, want_o), launched, "moe_down_iq1s" + tag, o.size());
    for (void* p : {(void*)d_gate, (void*)d_up, (void*)d_down, (void*)d_x, (void*)d_h, (void*)d_chosen, (void*)d_w,
                    (void*)d_xq, (void*)d_hq, (void*)d_g, (void*)d_u, (void*)d_o})
        cudaFree(p);
}

// On an AVX2 host, the portable emulation of the AVX2 order (avx2_order_dot, what the avx2 case
// is checked against elsewhere) equals the real kernel bit for bit. Host only.
void test_avx2_emulation() {
#if defined(__x86_64__)
    if (!host_has_avx2_kernel()) return;
    const int64_t n = 1792;
    size_t differing = 0;
    for (int t = 0; t < 200; ++t) {
        const auto w = random_blocks(size_t(n / 256));
        const auto y = host_q8k(normal(size_t(n)), n, 1);
        const float a = quant::vec_dot_iq1s_q8k_avx2(n, w.data(), y.data()), b = avx2_order_dot(n, w.data(), y.data());
        differing += std::memcmp(&a, &b, sizeof a) != 0;
    }
    report(differing == 0, "AVX2-order emulation = vec_dot_iq1s_q8k_avx2", std::to_string(differing) + " of 200 rows differ");
#endif
}

// Bad arguments: cudaErrorInvalidValue before any launch (host buffers stand in for device ones:
// nothing is read), so this runs without a GPU too.
void test_moe_arguments() {
    alignas(16) static uint8_t fake[4096];
    const auto* f = reinterpret_cast<float*>(fake);
    auto* out = reinterpret_cast<float*>(fake + 2048);
    const auto* ids = reinterpret_cast<const int32_t*>(fake + 1024);
    const void* act = fake + 512;
    const void* odd_act = fake + 514;
    const cuda::Iq1sStack good{fake, 256, 4, 2}, ragged{fake, 300, 4, 2}, odd{fake + 1, 256, 4, 2};
    const auto S = quant::Iq1sKernel::scalar;
    struct Check {
        const char* what;
        cudaError_t got;
    };
    const Check checks[] = {
        {"moe_gate_up_iq1s n_sel < 0", cuda::moe_gate_up_iq1s(good, good, act, ids, -1, S, out, out, nullptr)},
        {"moe_gate_up_iq1s n_sel over the limit",
         cuda::moe_gate_up_iq1s(good, good, act, ids, cuda::kMoeMaxSelected + 1, S, out, out, nullptr)},
        {"moe_gate_up_iq1s cols not whole blocks", cuda::moe_gate_up_iq1s(ragged, ragged, act, ids, 1, S, out, out, nullptr)},
        {"moe_gate_up_iq1s odd weights", cuda::moe_gate_up_iq1s(odd, odd, act, ids, 1, S, out, out, nullptr)},
        {"moe_gate_up_iq1s gate/up shapes differ",
         cuda::moe_gate_up_iq1s(good, cuda::Iq1sStack{fake, 256, 5, 2}, act, ids, 1, S, out, out, nullptr)},
        {"moe_gate_up_iq1s act null", cuda::moe_gate_up_iq1s(good, good, nullptr, ids, 1, S, out, out, nullptr)},
        {"moe_gate_up_iq1s act misaligned", cuda::moe_gate_up_iq1s(good, good, odd_act, ids, 1, S, out, out, nullptr)},
        {"moe_gate_up_iq1s chosen null", cuda::moe_gate_up_iq1s(good, good, act, nullptr, 1, S, out, out, nullptr)},
        {"moe_gate_up_iq1s out null", cuda::moe_gate_up_iq1s(good, good, act, ids, 1, S, nullptr, out, nullptr)},
        {"moe_down_iq1s n_sel < 0", cuda::moe_down_iq1s(good, act, ids, f, -1, S, out, nullptr)},
        {"moe_down_iq1s n_sel over the limit",
         cuda::moe_down_iq1s(good, act, ids, f, cuda::kMoeMaxSelected + 1, S, out, nullptr)},
        {"moe_down_iq1s cols not whole blocks", cuda::moe_down_iq1s(ragged, act, ids, f, 1, S, out, nullptr)},
        {"moe_down_iq1s act misaligned", cuda::moe_down_iq1s(good, odd_act, ids, f, 1, S, out, nullptr)},
        {"moe_down_iq1s weights null", cuda::moe_down_iq1s(good, act, ids, nullptr, 1, S, out, nullptr)},
        {"moe_down_iq1s out null", cuda::moe_down_iq1s(good, act, ids, f, 1, S, nullptr, nullptr)},
    };
    for (const Check& c : checks) {
        const bool ok = c.got == cudaErrorInvalidValue;
        report(ok, c.what, ok ? "rejected" : cudaGetErrorString(c.got));
    }
}

// One MLA case: the shape of a layer (real query strides: heads of qk_nope + R floats, the rope
// part last), n_past cached positions, m new tokens.
struct MlaCase {
    int n_head, kv_lora, n_rot, n_tokens, n_past;
    float scale;
};

// Stores the new rows through mla_cache_store, runs mla_attention and compares o_lat with a
// float64 causal softmax over the same f16 rows. The cache has poison rows (f16 NaN) past the
// last stored one: a kernel reading past a token's keys turns its output into NaN.
void test_mla_case(const MlaCase& c) {
    const int H = c.n_head, C = c.kv_lora, R = c.n_rot, m = c.n_tokens, W = C + R, nope = 128;
    const int64_t n_ctx = int64_t(c.n_past) + m + 9;
    cuda::MlaAttentionShape s{H, C, R, m, H * (nope + R), nope + R, nope, c.scale};
    const auto q_abs = normal(size_t(H) * m * C), q = normal(size_t(m) * s.q_stride), ckv = normal(size_t(m) * W);
    const auto past_f = normal(size_t(c.n_past) * W);
    std::vector<uint16_t> cache(size_t(n_ctx) * W, 0x7e00u);  // NaN
    for (size_t i = 0; i < past_f.size(); ++i) cache[i] = quant::f32_to_f16(past_f[i]);
    std::vector<uint16_t> want_cache = cache;  // the store's expected result: the CPU's rounding
    for (size_t i = 0; i < ckv.size(); ++i) want_cache[size_t(c.n_past) * W + i] = quant::f32_to_f16(ckv[i]);

    auto* d_qa = upload(q_abs);
    auto* d_q = upload(q);
    auto* d_ckv = upload(ckv);
    auto* d_cache = upload(cache);
    auto* d_pos = upload(std::vector<int32_t>{c.n_past});
    std::vector<float> poison(size_t(H) * m * C, NAN);
    float* d_out = upload(poison);
    auto* cache_h = reinterpret_cast<__half*>(d_cache);
    cudaError_t e = cuda::mla_cache_store(d_ckv, m, W, d_pos, cache_h, nullptr);
    if (e == cudaSuccess) e = cuda::mla_attention(d_qa, d_q, cache_h, d_pos, s, d_out, nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    const auto got = download(d_out, poison.size());
    const auto got_cache = download(d_cache, cache.size());

    size_t cache_diff = 0;
    for (size_t i = 0; i < cache.size(); ++i) cache_diff += got_cache[i] != want_cache[i];
    std::vector<double> key(size_t(n_ctx) * W), p;
    for (size_t i = 0; i < key.size(); ++i) key[i] = double(quant::f16_to_f32(want_cache[i]));
    double err = 0.0, max_o = 0.0;
    for (int h = 0; h < H; ++h)
        for (int t = 0; t < m; ++t) {
            const int64_t n_keys = int64_t(c.n_past) + t + 1;  // causal
            const float* qa = &q_abs[(size_t(h) * m + t) * C];
            const float* qpe = &q[size_t(t) * s.q_stride + size_t(h) * s.q_head_stride + s.q_pe_offset];
            p.assign(size_t(n_keys), 0.0);
            double mx = -1e300, sum = 0.0;
            for (int64_t k = 0; k < n_keys; ++k) {
                const double* row = &key[size_t(k) * W];
                double dot = 0.0;
                for (int i = 0; i < C; ++i) dot += double(qa[i]) * row[i];
                for (int i = 0; i < R; ++i) dot += double(qpe[i]) * row[C + i];
                p[size_t(k)] = dot * c.scale;
                mx = std::max(mx, p[size_t(k)]);
            }
            for (auto& v : p) sum += v = std::exp(v - mx);
            for (int ch = 0; ch < C; ++ch) {
                double o = 0.0;
                for (int64_t k = 0; k < n_keys; ++k) o += p[size_t(k)] * key[size_t(k) * W + ch];
                o /= sum;
                max_o = std::max(max_o, std::fabs(o));
                const double d = std::fabs(double(got[(size_t(h) * m + t) * C + ch]) - o);
                err = std::isnan(d) ? INFINITY : std::max(err, d);
            }
        }
    const double tol = 1e-4 * max_o;
    char what[96];
    std::snprintf(what, sizeof what, "mla_attention H%d C%d R%d m%d past%d", H, C, R, m, c.n_past);
    report(e == cudaSuccess && err <= tol, what, err, tol);
    std::snprintf(what, sizeof what, "mla_cache_store C%d R%d m%d (bits)", C, R, m);
    report(e == cudaSuccess && cache_diff == 0, what, double(cache_diff), 0.0);
    for (void* ptr : {(void*)d_qa, (void*)d_q, (void*)d_ckv, (void*)d_cache, (void*)d_pos, (void*)d_out}) cudaFree(ptr);
}

// Bad shapes, null pointers, a misaligned cache: cudaErrorInvalidValue before any launch, so
// this runs without a GPU too (host buffers stand in for device ones: nothing is read).
void test_mla_arguments() {
    static float fake[1024];
    float* f = fake;
    const auto* cache = reinterpret_cast<const __half*>(fake + 512);
    const auto* odd_cache = reinterpret_cast<const __half*>(reinterpret_cast<const char*>(fake + 512) + 1);
    const auto* pos = reinterpret_cast<const int32_t*>(fake + 1000);
    auto* store_to = reinterpret_cast<__half*>(fake + 512);
    const cuda::MlaAttentionShape good{2, 16, 4, 1, 2 * 12, 12, 8, 0.1f};
    auto with = [&](auto change) {
        cuda::MlaAttentionShape s = good;
        change(s);
        return cuda::mla_attention(f, f, cache, pos, s, f, nullptr);
    };
    struct Check {
        const char* what;
        cudaError_t got;
    };
    const Check checks[] = {
        {"mla_attention n_head 0", with([](auto& s) { s.n_head = 0; })},
        {"mla_attention kv_lora 0", with([](auto& s) { s.kv_lora = 0; })},
        {"mla_attention kv_lora over the limit", with([](auto& s) { s.kv_lora = cuda::kMlaMaxLatent + 1; })},
        {"mla_attention n_rot < 0", with([](auto& s) { s.n_rot = -1; })},
        {"mla_attention n_rot over the limit", with([](auto& s) { s.n_rot = cuda::kMlaMaxRope + 1; })},
        {"mla_attention n_tokens 0", with([](auto& s) { s.n_tokens = 0; })},
        {"mla_attention rope past the head", with([](auto& s) { s.q_pe_offset = 9; })},
        {"mla_attention q_pe_offset < 0", with([](auto& s) { s.q_pe_offset = -1; })},
        {"mla_attention rope past the row", with([](auto& s) { s.q_stride = 2 * 12 - 1; })},
        {"mla_attention scale NaN", with([](auto& s) { s.scale = NAN; })},
        {"mla_attention q_abs null", cuda::mla_attention(nullptr, f, cache, pos, good, f, nullptr)},
        {"mla_attention q null", cuda::mla_attention(f, nullptr, cache, pos, good, f, nullptr)},
        {"mla_attention cache null", cuda::mla_attention(f, f, nullptr, pos, good, f, nullptr)},
        {"mla_attention cache misaligned", cuda::mla_attention(f, f, odd_cache, pos, good, f, nullptr)},
        {"mla_attention pos0 null", cuda::mla_attention(f, f, cache, nullptr, good, f, nullptr)},
        {"mla_attention o_lat null", cuda::mla_attention(f, f, cache, pos, good, nullptr, nullptr)},
        {"mla_cache_store n_tokens 0", cuda::mla_cache_store(f, 0, 20, pos, store_to, nullptr)},
        {"mla_cache_store width 0", cuda::mla_cache_store(f, 1, 0, pos, store_to, nullptr)},
        {"mla_cache_store ckv null", cuda::mla_cache_store(nullptr, 1, 20, pos, store_to, nullptr)},
        {"mla_cache_store pos0 null", cuda::mla_cache_store(f, 1, 20, nullptr, store_to, nullptr)},
        {"mla_cache_store cache null", cuda::mla_cache_store(f, 1, 20, pos, nullptr, nullptr)},
    };
    for (const Check& c : checks) {
        const bool ok = c.got == cudaErrorInvalidValue;
        report(ok, c.what, ok ? "rejected" : cudaGetErrorString(c.got));
    }
}

void test_mla() {
    // T = 1 below 16 tokens, 8 from 16 (several token tiles, a ragged last one); half2 rows for
    // even C and R, single halves otherwise; 64-position tiles (n_past + m not a multiple of 64).
    const std::vector<MlaCase> full = {
        {8, 512, 64, 1, 333, 0.0722f},    // decode
        {2, 512, 64, 1, 4099, 0.0722f},   // decode, a long cache
        {4, 512, 64, 37, 100, 0.0722f},   // prefill after a prefix: every token's causal mask
        {3, 512, 64, 64, 1000, 0.0722f},  // prefill, many tiles
        {3, 512, 0, 5, 70, 0.0722f},      // no rope part, a few tokens at T = 1
        {5, 96, 64, 20, 0, 0.3f},         // C = 96, from position 0 (token 0 sees itself only), peaked
        {2, 97, 3, 17, 5, 0.1f},          // odd widths: single-half reads, T = 8
        {2, 511, 1, 3, 65, 0.05f},        // odd widths at T = 1
        {1, 1024, 128, 16, 40, 0.05f},    // the largest row (the most shared memory)
    };
    const std::vector<MlaCase> small = {
        {2, 512, 64, 1, 300, 0.2f},  // five tiles: the running max moves
        {2, 96, 64, 19, 130, 0.3f},
        {1, 97, 3, 2, 65, 0.1f},
    };
    for (const MlaCase& c : cuda_test::small_sizes() ? small : full) test_mla_case(c);
}

}  // namespace

int main() {
    test_mla_arguments();  // launches nothing: runs without a GPU too
    test_moe_arguments();
    if (const int rc = cuda_test::start("cuda moe/mla tests")) return rc;
    test_route();
    test_avx2_emulation();
    for (const quant::Iq1sKernel order : {quant::Iq1sKernel::scalar, quant::Iq1sKernel::avx2, quant::Iq1sKernel::best})
        for (const int n_sel : {1, 8, 16}) test_gate_up_down(n_sel, order);
    test_mla();
    return cuda_test::finish("cuda moe/mla tests");
}
