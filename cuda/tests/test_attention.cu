// GQA attention over the device KV cache (cuda/kernels/attention/attention.cuh) against a host implementation of
// the CPU's arithmetic (Context::attention_scores_gqa: float dot products of the query with
// exec::KvCache::load_k rows, times 1/sqrt(head_dim), exec::softmax, float sums of the weighted
// load_v rows), on fresh random data with the same cache bytes on both sides: the host fills an
// exec::KvCache and the device cache gets the bytes KvCache::store writes (kv_rows.hpp); rows
// past the sequence hold NaN bit patterns, so a kernel reading past the causal limit fails.
// Outputs are poisoned with NaN. Cases: decode (n_tokens 1, also through a CUDA graph captured
// once and replayed at two positions) and prefill (n_tokens 1, 5, 64, 100) at n_past 0, 37, 1000
// (decode also 128: a chunk holding a single key), head_dim 64 and 128, n_head 8 with n_head_kv
// 8, 2, 1, f16 and q8_0 caches (STRATA_CUDA_TEST_SMALL=1: a subset with the same edges).
//
// Tolerance: |gpu - host| <= 1e-4 * sum_p a_p |v_p[d]| per output value (the L1 mass of the
// weighted sum it comes from, so outputs that cancel to near zero are judged fairly). Both sides
// use the same dequantized values; they differ only in float32 rounding: summation order of the
// dot products (head_dim terms) and of the weighted sums (up to ~1100 keys; the GPU merges
// partial sums, the host adds left to right), the device expf (<= 2 ulp) and online rescaling.
// Each of those is a few 1e-7 relative to the mass in practice; 1e-4 leaves room for the worst
// case of ~1100 accumulated roundings (1100 * 6e-8 = 6.6e-5) without hiding an indexing error,
// which moves values by O(1) of the mass.
// Exit 77 (ctest: skipped) with a printed reason when no GPU is present.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/attention/attention.cuh"
#include "cuda_test_util.cuh"
#include "exec/attention/kv_cache.hpp"
#include "exec/ops.hpp"
#include "kv_rows.hpp"

using namespace strata;
using namespace strata::cuda_test;  // the test programs' helpers

namespace {

constexpr double kTolerance = 1e-4;

struct Config {
    int head_dim, n_head_kv, q8;
};

// One sequence's K/V for positions [0, n_filled), on the host (an exec::KvCache) and on the
// device (its bytes; rows from n_filled to n_ctx are 0xff bytes: NaN halves and NaN scales).
struct Caches {
    cuda::AttentionShape s;
    exec::KvCache host;
    std::vector<float> k_host, v_host;  // [n_ctx][n_head_kv][head_dim] as KvCache::load returns them
    std::vector<uint8_t> k_bytes, v_bytes;
    uint8_t* dk = nullptr;
    uint8_t* dv = nullptr;

    Caches(const Config& c, int64_t n_ctx, int64_t n_filled) {
        const exec::KvType type = c.q8 ? exec::KvType::q8_0 : exec::KvType::f16;
        s.n_head = 8, s.n_head_kv = c.n_head_kv, s.head_dim = c.head_dim, s.kv_q8_0 = c.q8;
        s.row_bytes = exec::kv_row_bytes(type, c.n_head_kv, c.head_dim), s.n_ctx = n_ctx;
        s.scale = float(1.0 / std::sqrt(double(c.head_dim)));
        host = exec::KvCache(type, 1, n_ctx, c.n_head_kv, c.head_dim);
        k_bytes.assign(size_t(n_ctx) * s.row_bytes, 0xff);
        v_bytes = k_bytes;
        k_host.assign(size_t(n_ctx) * size_t(c.n_head_kv) * size_t(c.head_dim), NAN);
        v_host = k_host;
        for (int64_t p = 0; p < n_filled; ++p) store(p, normal(size_t(c.n_head_kv * c.head_dim)),
                                                      normal(size_t(c.n_head_kv * c.head_dim)));
        dk = upload(k_bytes);
        dv = upload(v_bytes);
    }
    ~Caches() { cudaFree(dk), cudaFree(dv); }
    Caches(const Caches&) = delete;
    Caches& operator=(const Caches&) = delete;

    // The host side of storing position p (the device side: upload, or kv_store).
    void store(int64_t p, const std::vector<float>& k, const std::vector<float>& v) {
        const int64_t n = int64_t(s.n_head_kv) * s.head_dim;
        host.store(0, p, k.data(), v.data());
        const auto rk = cuda_test::kv_row_bytes_host(s.kv_q8_0, k.data(), n);
        const auto rv = cuda_test::kv_row_bytes_host(s.kv_q8_0, v.data(), n);
        std::copy(rk.begin(), rk.end(), k_bytes.begin() + p * int64_t(s.row_bytes));
        std::copy(rv.begin(), rv.end(), v_bytes.begin() + p * int64_t(s.row_bytes));
        for (int h = 0; h < s.n_head_kv; ++h) {
            host.load_k(0, p, h, &k_host[size_t((p * s.n_head_kv + h) * s.head_dim)]);
            host.load_v(0, p, h, &v_host[size_t((p * s.n_head_kv + h) * s.head_dim)]);
        }
    }
};

// The CPU's attention for tokens at positions n_past + t; mass: the tolerance's L1 mass.
void host_attention(const Caches& c, const std::vector<float>& q, int n_tokens, int64_t n_past, std::vector<float>& out,
                    std::vector<double>& mass) {
    const int H = c.s.n_head, D = c.s.head_dim, G = c.s.n_head / c.s.n_head_kv, KVH = c.s.n_head_kv;
    out.assign(size_t(n_tokens) * size_t(H * D), 0.0f);
    mass.assign(out.size(), 0.0);
    std::vector<float> scores;
    for (int t = 0; t < n_tokens; ++t)
        for (int h = 0; h < H; ++h) {
            const int kvh = h / G;
            const int64_t n_keys = n_past + t + 1;
            const float* qh = &q[size_t((int64_t(t) * H + h) * D)];
            scores.assign(size_t(n_keys), 0.0f);
            for (int64_t p = 0; p < n_keys; ++p) {
                const float* k = &c.k_host[size_t((p * KVH + kvh) * D)];
                float dot = 0.0f;
                for (int d = 0; d < D; ++d) dot += qh[d] * k[d];
                scores[size_t(p)] = dot * c.s.scale;
            }
            exec::softmax(scores.data(), n_keys);
            float* o = &out[size_t((int64_t(t) * H + h) * D)];
            double* m = &mass[size_t((int64_t(t) * H + h) * D)];
            for (int64_t p = 0; p < n_keys; ++p) {
                const float* v = &c.v_host[size_t((p * KVH + kvh) * D)];
                const float a = scores[size_t(p)];
                for (int d = 0; d < D; ++d) {
                    o[d] += a * v[d];
                    m[d] += double(a) * std::fabs(double(v[d]));
                }
            }
        }
}

// Worst |got - want| / mass; NaN anywhere is infinite. A mass of 0 (every visible value 0, as a
// q8_0 value that rounds to 0 is when only one key is visible) allows no error at all.
double worst_ratio(const std::vector<float>& got, const std::vector<float>& want, const std::vector<double>& mass) {
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(double(got[i]) - double(want[i]));
        const double r = err == 0.0 ? 0.0 : err / mass[i];
        if (!(r <= 1e300)) return INFINITY;
        worst = std::max(worst, r);
    }
    return worst;
}

void report_case(bool ok, const char* path, const Config& c, int n_tokens, int64_t n_past, double ratio,
                 cudaError_t e) {
    char what[256];
    std::snprintf(what, sizeof what,
                  "%-8s hd %3d kv_heads %d %-4s n_tokens %3d n_past %4lld: max err/mass %.3g (tol %.0e)%s%s", path,
                  c.head_dim, c.n_head_kv, c.q8 ? "q8_0" : "f16", n_tokens, (long long)n_past, ratio, kTolerance,
                  e == cudaSuccess ? "" : " error: ", e == cudaSuccess ? "" : cudaGetErrorString(e));
    report(ok, what);
}

// decode: attention_decode (n_tokens 1); prefill: attention_prefill; dispatch: attention().
enum class Path { decode, prefill, dispatch };

void run_case(const Config& c, Path path, int n_tokens, int64_t n_past) {
    const int64_t n_ctx = n_past + n_tokens + 77;  // ragged, with empty decode chunks past the end
    Caches caches(c, n_ctx, n_past + n_tokens);
    const int64_t q_len = int64_t(n_tokens) * caches.s.n_head * c.head_dim;
    const auto q = normal(size_t(q_len), 1.5f);
    std::vector<float> want;
    std::vector<double> mass;
    host_attention(caches, q, n_tokens, n_past, want, mass);

    float* dq = upload(q);
    float* dout = upload(std::vector<float>(size_t(q_len), NAN));
    int32_t* dpast = upload(std::vector<int32_t>{int32_t(n_past)});
    const size_t ws_bytes = cuda::attention_workspace_bytes(caches.s, n_tokens);
    void* ws = nullptr;
    if (ws_bytes) cudaMalloc(&ws, ws_bytes);
    cudaError_t e = cudaSuccess;
    if (path == Path::decode) e = cuda::attention_decode(dq, caches.dk, caches.dv, caches.s, dpast, ws, dout, nullptr);
    else if (path == Path::prefill)
        e = cuda::attention_prefill(dq, caches.dk, caches.dv, caches.s, n_tokens, dpast, dout, nullptr);
    else e = cuda::attention(dq, caches.dk, caches.dv, caches.s, n_tokens, dpast, ws, dout, nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    const double ratio = worst_ratio(download(dout, size_t(q_len)), want, mass);
    const char* name = path == Path::decode ? "decode" : path == Path::prefill ? "prefill" : "dispatch";
    report_case(e == cudaSuccess && ratio <= kTolerance, name, c, n_tokens, n_past, ratio, e);
    cudaFree(dq), cudaFree(dout), cudaFree(dpast), cudaFree(ws);
}

// One decode step (kv_store of the new token, then attention) captured once as a CUDA graph and
// replayed at two positions set in device memory between replays.
void test_graph_replay(const Config& c) {
    const int64_t n_ctx = 1500, filled = 1300;
    Caches caches(c, n_ctx, filled);
    const int n = caches.s.n_head_kv * c.head_dim, qn = caches.s.n_head * c.head_dim;
    const auto k_new = normal(size_t(n)), v_new = normal(size_t(n)), q = normal(size_t(qn), 1.5f);
    float* dk = upload(k_new);
    float* dv = upload(v_new);
    float* dq = upload(q);
    float* dout = upload(std::vector<float>(size_t(qn), NAN));
    int32_t* dpast = upload(std::vector<int32_t>{0});
    void* ws = nullptr;
    cudaMalloc(&ws, cuda::attention_workspace_bytes(caches.s, 1));
    cudaStream_t stream = nullptr;
    cudaStreamCreate(&stream);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    if (e == cudaSuccess) e = cuda::kv_store(dk, dv, 1, caches.dk, caches.dv, caches.s, dpast, stream);
    if (e == cudaSuccess) e = cuda::attention(dq, caches.dk, caches.dv, caches.s, 1, dpast, ws, dout, stream);
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (e == cudaSuccess) e = end;
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    for (const int32_t n_past : {37, 1200}) {
        cudaError_t er = e;
        if (er == cudaSuccess) er = cudaMemcpy(dpast, &n_past, sizeof n_past, cudaMemcpyHostToDevice);
        if (er == cudaSuccess) er = cudaMemcpy(dout, std::vector<float>(size_t(qn), NAN).data(), sizeof(float) * size_t(qn),
                                               cudaMemcpyHostToDevice);
        if (er == cudaSuccess) er = cudaGraphLaunch(exec, stream);
        if (er == cudaSuccess) er = cudaStreamSynchronize(stream);
        caches.store(n_past, k_new, v_new);  // the host side of the graph's kv_store
        std::vector<float> want;
        std::vector<double> mass;
        host_attention(caches, q, 1, n_past, want, mass);
        const double ratio = worst_ratio(download(dout, size_t(qn)), want, mass);
        report_case(er == cudaSuccess && ratio <= kTolerance, "graph", c, 1, n_past, ratio, er);
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    cudaFree(dk), cudaFree(dv), cudaFree(dq), cudaFree(dout), cudaFree(dpast), cudaFree(ws);
}

void test_refusals() {
    Config c{96, 2, 0};  // head_dim 96: not a kernel's
    cuda::AttentionShape s;
    s.n_head = 8, s.n_head_kv = 2, s.head_dim = c.head_dim, s.row_bytes = 2 * 96 * 2, s.n_ctx = 10, s.scale = 0.1f;
    const bool refused = cuda::attention_prefill(reinterpret_cast<const float*>(16), reinterpret_cast<const uint8_t*>(16),
                                                 reinterpret_cast<const uint8_t*>(16), s, 3,
                                                 reinterpret_cast<const int32_t*>(16), reinterpret_cast<float*>(16),
                                                 nullptr) == cudaErrorInvalidValue &&
                         cuda::attention_workspace_bytes(s, 1) == 0;
    s.head_dim = 64, s.row_bytes = 2 * 64 * 2 + 2;  // row bytes that do not match the shape
    const bool refused_rows = cuda::kv_store(reinterpret_cast<const float*>(16), reinterpret_cast<const float*>(16), 1,
                                             reinterpret_cast<uint8_t*>(16), reinterpret_cast<uint8_t*>(16), s,
                                             reinterpret_cast<const int32_t*>(16), nullptr) == cudaErrorInvalidValue;
    cudaGetLastError();
    report(refused && refused_rows, std::string("refusals: head_dim 96 ") + (refused ? "refused" : "ACCEPTED") +
                                        ", mismatched row_bytes " + (refused_rows ? "refused" : "ACCEPTED"));
}

}  // namespace

int main() {
    if (const int rc = cuda_test::start("cuda attention")) return rc;
    test_refusals();
    // STRATA_CUDA_TEST_SMALL (compute-sanitizer runs): one GQA ratio, fewer lengths, the same edges
    // (a lone key, a chunk holding one key, a partial query tile, empty chunks past the end).
    const bool small = cuda_test::small_sizes();
    const std::vector<int> kv_heads = small ? std::vector<int>{2} : std::vector<int>{8, 2, 1};
    const std::vector<int64_t> decode_past = small ? std::vector<int64_t>{0, 128} : std::vector<int64_t>{0, 37, 128, 1000};
    const std::vector<int64_t> prefill_past = small ? std::vector<int64_t>{37} : std::vector<int64_t>{0, 37, 1000};
    const std::vector<int> prefill_tokens = small ? std::vector<int>{5, 20} : std::vector<int>{1, 5, 64, 100};
    for (const int head_dim : {64, 128})
        for (const int n_head_kv : kv_heads)
            for (const int q8 : {0, 1}) {
                const Config c{head_dim, n_head_kv, q8};
                for (const int64_t n_past : decode_past) run_case(c, Path::decode, 1, n_past);
                for (const int n_tokens : prefill_tokens)
                    for (const int64_t n_past : prefill_past) run_case(c, Path::prefill, n_tokens, n_past);
                run_case(c, Path::dispatch, 1, 37);
                run_case(c, Path::dispatch, 5, 37);
                test_graph_replay(c);
            }
    return cuda_test::finish("cuda attention");
}
