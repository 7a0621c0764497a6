// The element-wise ops (cuda/kernels/ops/ops.cuh) and kv_store (cuda/kernels/attention/attention.cuh) against lib/exec and
// lib/quant on fresh random data, outputs poisoned before each run, ragged sizes:
//   exact (bit for bit): add_inplace, add_row_bias, get_rows (vs quant::dequantize_row, every
//     table type the GPU takes; the read-only ones on random blocks), rope (vs exec::Rope with its
//     own tables, both orders, n_rot < head_dim,
//     positions up to 100,000: the kernel rounds every product and sum as the CPU does),
//     kv_store bytes (vs the bytes KvCache::store writes, and their decode vs KvCache::load);
//   within 3e-7 relative: rms_norm and head_rms_norm vs exec::rms_norm (both sum squares in
//     double; only the summation order differs, which can move the float scale by one ulp at a
//     rounding boundary, so the output by at most ~2 ulp = 2.4e-7 relative).
// Exit 77 (ctest: skipped) with a printed reason when no GPU is present.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/attention/attention.cuh"
#include "cuda_test_util.cuh"
#include "error_metrics.hpp"
#include "runtime/device_matrix.hpp"
#include "exec/attention/kv_cache.hpp"
#include "exec/ops.hpp"
#include "exec/rope.hpp"
#include "runtime/gpu_types.hpp"
#include "kv_rows.hpp"
#include "model/hparams.hpp"
#include "kernels/ops/ops.cuh"
#include "quant/convert.hpp"
#include "quant/formats.hpp"
#include "quant/half.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/type_traits.hpp"
#include "bench/random_blocks.hpp"

using namespace strata;
using namespace strata::cuda_test;  // the test programs' helpers

namespace {

bool same_bits(const float* a, const float* b, size_t n, size_t* mismatches) {
    *mismatches = 0;
    for (size_t i = 0; i < n; ++i) *mismatches += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return *mismatches == 0;
}

std::vector<float> nan_vector(size_t n) { return std::vector<float>(n, NAN); }

void test_rms_norm() {
    const float eps = 1e-5f;
    for (const int64_t n : {int64_t(4099), int64_t(64), int64_t(1)}) {
        const int rows = 7;
        const auto x = normal(size_t(n * rows), 2.0f, 0.3f), w = normal(size_t(n));
        std::vector<float> want(x.size());
        for (int r = 0; r < rows; ++r) exec::rms_norm(&x[size_t(r * n)], w.data(), n, double(eps), &want[size_t(r * n)]);
        float* dx = upload(x);
        float* dw = upload(w);
        float* dout = upload(nan_vector(x.size()));
        cudaError_t e = cuda::rms_norm(dx, dw, n, rows, eps, dout, nullptr);
        const auto got = download(dout, x.size());
        if (e == cudaSuccess) e = cuda::rms_norm(dx, dw, n, rows, eps, dx, nullptr);  // in place
        const auto got_alias = download(dx, x.size());
        const double err = std::max(max_rel_error(got, want), max_rel_error(got_alias, want));
        char detail[96];
        std::snprintf(detail, sizeof detail, "n %lld x %d rows: max rel err %.3g (tol 3e-7)", (long long)n, rows, err);
        report(e == cudaSuccess && err <= 3e-7, "rms_norm (and in place)", detail);
        cudaFree(dx), cudaFree(dw), cudaFree(dout);
    }
}

void test_head_rms_norm() {
    const int n_tokens = 5, n_heads = 7;
    for (const int head_dim : {128, 80}) {
        const int64_t stride = int64_t(n_heads) * head_dim + 13;  // padding the kernel must not touch
        const auto x = normal(size_t(n_tokens * stride), 1.5f), w = normal(size_t(head_dim));
        auto want = x;
        for (int t = 0; t < n_tokens; ++t)
            for (int h = 0; h < n_heads; ++h) {
                float* head = &want[size_t(t * stride + h * head_dim)];
                exec::rms_norm(head, w.data(), head_dim, double(1e-6f), head);
            }
        float* dx = upload(x);
        float* dw = upload(w);
        const cudaError_t e = cuda::head_rms_norm(dx, dw, n_tokens, n_heads, head_dim, stride, 1e-6f, nullptr);
        const auto got = download(dx, x.size());
        const double err = max_rel_error(got, want);
        char detail[96];
        std::snprintf(detail, sizeof detail, "head_dim %d: max rel err %.3g (tol 3e-7), padding kept", head_dim, err);
        report(e == cudaSuccess && err <= 3e-7, "head_rms_norm (qwen3 q/k norms)", detail);
        cudaFree(dx), cudaFree(dw);
    }
}

void test_adds() {
    const size_t n = 100003;
    const auto x = normal(n), y = normal(n);
    auto want = x;
    for (size_t i = 0; i < n; ++i) want[i] += y[i];
    float* dx = upload(x);
    float* dy = upload(y);
    cudaError_t e = cuda::add_inplace(dx, dy, n, nullptr);
    size_t bad = 0;
    bool ok = e == cudaSuccess && same_bits(download(dx, n).data(), want.data(), n, &bad);
    char detail[96];
    std::snprintf(detail, sizeof detail, "n %zu: %zu values differ (exact)", n, bad);
    report(ok, "add_inplace", detail);
    cudaFree(dx), cudaFree(dy);

    const int64_t width = 1001;
    const int rows = 13;
    const auto xb = normal(size_t(width * rows)), bias = normal(size_t(width));
    auto want_b = xb;
    for (int r = 0; r < rows; ++r)
        for (int64_t c = 0; c < width; ++c) want_b[size_t(r * width + c)] += bias[size_t(c)];
    dx = upload(xb);
    float* db = upload(bias);
    e = cuda::add_row_bias(dx, db, width, rows, nullptr);
    ok = e == cudaSuccess && same_bits(download(dx, xb.size()).data(), want_b.data(), xb.size(), &bad);
    std::snprintf(detail, sizeof detail, "%d rows of %lld: %zu values differ (exact)", rows, (long long)width, bad);
    report(ok, "add_row_bias", detail);
    cudaFree(dx), cudaFree(db);
}

// A table of `rows` rows of `cols` values of a type, as bytes (IQ1_S: random blocks with a small
// positive scale, covering every grid index and sign; the others: encoded random floats).
std::vector<uint8_t> random_table(uint32_t type, int64_t rows, int64_t cols) {
    const size_t row_bytes = quant::row_size(type, cols);
    std::vector<uint8_t> t(row_bytes * size_t(rows) + cuda::kDevicePadBytes);
    if (type == quant::kTypeIQ1_S) {
        for (auto& b : t) b = uint8_t(rng());
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t b = 0; b < cols / quant::kQK_K; ++b) {
                auto* blk = reinterpret_cast<quant::block_iq1_s*>(&t[size_t(r) * row_bytes]) + b;
                blk->d = quant::f32_to_f16(float(rng() % 1000 + 1) / 8192.0f);
            }
        return t;
    }
    if (!quant::can_quantize(type)) {  // read-only types: random blocks (random_blocks.hpp)
        const int64_t be = quant::block_elements(type);
        const std::vector<uint8_t> blocks = cuda::random_blocks(type, size_t(rows * (cols / be)), rng);
        std::copy(blocks.begin(), blocks.end(), t.begin());
        return t;
    }
    for (int64_t r = 0; r < rows; ++r) {
        const auto v = normal(size_t(cols), 0.7f);
        quant::quantize_row(type, v.data(), &t[size_t(r) * row_bytes], cols, nullptr);
    }
    return t;
}

void test_get_rows() {
    struct Case {
        uint32_t type;
        const char* name;
        int64_t cols;
    };
    std::vector<Case> cases = {{quant::kTypeF32, "F32", 333},
                               {quant::kTypeF16, "F16", 333},
                               {quant::kTypeBF16, "BF16", 335},
                               {quant::kTypeQ8_0, "Q8_0", 352},
                               {quant::kTypeIQ1_S, "IQ1_S", 768}};
    // Every other type the GPU takes (an embedding table may have any): three blocks a row.
    for (const cuda::GpuTypeInfo& g : cuda::kGpuTypes) {
        bool listed = false;
        for (const Case& c : cases) listed = listed || c.type == g.type;
        if (!listed) cases.push_back({g.type, quant::find_type_traits(g.type)->name, 3 * quant::block_elements(g.type)});
    }
    const int64_t rows = 53;
    for (const Case& c : cases) {
        const auto table = random_table(c.type, rows, c.cols);
        std::vector<int32_t> ids = {0, int32_t(rows - 1)};
        for (int i = 0; i < 9; ++i) ids.push_back(int32_t(rng() % uint64_t(rows)));
        ids.push_back(ids[4]);  // a repeated id
        const int n = int(ids.size());
        uint8_t* dt = upload(table);
        int32_t* dids = upload(ids);
        float* dout = upload(nan_vector(size_t(n * c.cols)));
        const cuda::DeviceMatrix m{c.type, c.cols, rows, quant::row_size(c.type, c.cols), dt};
        const cudaError_t e = cuda::get_rows(m, dids, n, dout, nullptr);
        const auto got = download(dout, size_t(n * c.cols));
        std::vector<float> want(got.size());
        for (int i = 0; i < n; ++i)
            quant::dequantize_row(c.type, &table[size_t(ids[size_t(i)]) * m.row_bytes], &want[size_t(i * c.cols)], c.cols);
        size_t bad = 0;
        const bool ok = e == cudaSuccess && same_bits(got.data(), want.data(), got.size(), &bad);

        // An id outside the table: a NaN row, not a read past it (poison: a finite value).
        const std::vector<int32_t> bad_ids = {int32_t(rows), -1};
        int32_t* dbad = upload(bad_ids);
        float* dout2 = upload(std::vector<float>(size_t(2 * c.cols), 12345.0f));
        const cudaError_t e2 = cuda::get_rows(m, dbad, 2, dout2, nullptr);
        const auto got2 = download(dout2, size_t(2 * c.cols));
        const bool nan_rows = e2 == cudaSuccess && std::all_of(got2.begin(), got2.end(), [](float v) { return std::isnan(v); });

        char what[64], detail[96];
        std::snprintf(what, sizeof what, "get_rows %s", c.name);
        std::snprintf(detail, sizeof detail, "%d rows of %lld: %zu values differ (exact); bad id -> NaN row: %s", n,
                      (long long)c.cols, bad, nan_rows ? "yes" : "NO");
        report(ok && nan_rows, what, detail);
        cudaFree(dt), cudaFree(dids), cudaFree(dout), cudaFree(dbad), cudaFree(dout2);
    }
}

void test_rope() {
    struct Case {
        model::RopeOrder order;
        int head_dim, n_rot;
        bool yarn;
        const char* name;
    };
    const Case cases[] = {{model::RopeOrder::normal, 128, 128, false, "rope normal, n_rot = head_dim"},
                          {model::RopeOrder::normal, 128, 64, true, "rope normal, n_rot 64 of 128, yarn"},
                          {model::RopeOrder::neox, 128, 128, false, "rope neox, n_rot = head_dim"},
                          {model::RopeOrder::neox, 64, 32, true, "rope neox, n_rot 32 of 64, yarn"}};
    const int n_tokens = 5, n_heads = 3;
    for (const Case& c : cases) {
        model::Hparams hp;
        hp.arch.rope_order = c.order;
        hp.rope.n_rot = c.n_rot;
        hp.rope.freq_base = c.yarn ? 1e6 : 10000.0;
        if (c.yarn) {
            hp.rope.scaling = model::RopeScaling::yarn;
            hp.rope.factor = 4.0;
            hp.rope.n_ctx_orig = 4096;
            hp.rope.ext_factor = 1.0;
        }
        const exec::Rope rope(hp);
        const int P = int(rope.n_pairs());
        const int64_t stride = int64_t(n_heads) * c.head_dim + 5;
        for (const int32_t pos0 : {0, 37, 100000}) {
            // Table rows outside [pos0, pos0 + n_tokens) are NaN: reading a wrong row shows.
            const size_t table_rows = size_t(pos0 + n_tokens);
            std::vector<float> cos_t(table_rows * size_t(P), NAN), sin_t(cos_t.size(), NAN);
            for (int t = 0; t < n_tokens; ++t)
                rope.angles(pos0 + t, &cos_t[size_t(pos0 + t) * size_t(P)], &sin_t[size_t(pos0 + t) * size_t(P)]);
            const auto x = normal(size_t(n_tokens * stride), 2.0f);
            auto want = x;
            for (int t = 0; t < n_tokens; ++t)
                for (int h = 0; h < n_heads; ++h)
                    rope.apply(&want[size_t(t * stride + h * c.head_dim)], &cos_t[size_t(pos0 + t) * size_t(P)],
                               &sin_t[size_t(pos0 + t) * size_t(P)]);
            float* dx = upload(x);
            float* dcos = upload(cos_t);
            float* dsin = upload(sin_t);
            int32_t* dpos = upload(std::vector<int32_t>{pos0});
            const cudaError_t e = cuda::rope(dx, n_tokens, n_heads, c.head_dim, stride, dcos, dsin, P,
                                             c.order == model::RopeOrder::neox, dpos, nullptr);
            size_t bad = 0;
            const bool ok = e == cudaSuccess && same_bits(download(dx, x.size()).data(), want.data(), x.size(), &bad);
            char detail[96];
            std::snprintf(detail, sizeof detail, "pos0 %d: %zu values differ (exact)", pos0, bad);
            report(ok, c.name, detail);
            cudaFree(dx), cudaFree(dcos), cudaFree(dsin), cudaFree(dpos);
        }
    }
}

// k/v rows with values that exercise the f16 rounding (ties to even, subnormals, overflow to
// infinity, -0) and a q8_0 block of zeros (scale 0), planted among random ones.
std::vector<float> kv_values(size_t n) {
    auto v = normal(n, 1.3f);
    const float special[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -(2.0f + 0x1p-10f), 3e-8f, -1e-6f, 6.2e-5f,
                             70000.0f, -0.0f, 65519.0f, 65520.0f};
    for (size_t i = 0; i < sizeof special / sizeof special[0] && i < n; ++i) v[i * 7 % n] = special[i];
    for (size_t i = 32; i < 64 && i < n; ++i) v[i] = 0.0f;
    return v;
}

void test_kv_store() {
    const int n_head_kv = 2, n_ctx = 23, n_tokens = 7;
    for (const int q8 : {0, 1})
        for (const int head_dim : {64, 128})
            for (const int32_t n_past : {13, n_ctx - 3}) {  // the second runs past the cache's end
                const int64_t n = int64_t(n_head_kv) * head_dim;
                const exec::KvType type = q8 ? exec::KvType::q8_0 : exec::KvType::f16;
                cuda::AttentionShape s;
                s.n_head = 8, s.n_head_kv = n_head_kv, s.head_dim = head_dim, s.kv_q8_0 = q8;
                s.row_bytes = exec::kv_row_bytes(type, n_head_kv, head_dim), s.n_ctx = n_ctx;
                s.scale = 1.0f;
                auto k = kv_values(size_t(n_tokens * n)), v = kv_values(size_t(n_tokens * n));
                std::reverse(v.begin(), v.end());
                const std::vector<uint8_t> poison(size_t(n_ctx) * s.row_bytes, 0xab);
                uint8_t* dk_cache = upload(poison);
                uint8_t* dv_cache = upload(poison);
                float* dk = upload(k);
                float* dv = upload(v);
                int32_t* dpast = upload(std::vector<int32_t>{n_past});
                const cudaError_t e = cuda::kv_store(dk, dv, n_tokens, dk_cache, dv_cache, s, dpast, nullptr);
                const auto got_k = download(dk_cache, poison.size()), got_v = download(dv_cache, poison.size());

                exec::KvCache host(type, 1, n_ctx, n_head_kv, head_dim);
                auto want_k = poison, want_v = poison;
                for (int t = 0; t < n_tokens && n_past + t < n_ctx; ++t) {
                    const int64_t pos = n_past + t;
                    host.store(0, pos, &k[size_t(t * n)], &v[size_t(t * n)]);
                    const auto rk = cuda_test::kv_row_bytes_host(q8, &k[size_t(t * n)], n);
                    const auto rv = cuda_test::kv_row_bytes_host(q8, &v[size_t(t * n)], n);
                    std::copy(rk.begin(), rk.end(), want_k.begin() + pos * int64_t(s.row_bytes));
                    std::copy(rv.begin(), rv.end(), want_v.begin() + pos * int64_t(s.row_bytes));
                }
                const bool bytes_ok = got_k == want_k && got_v == want_v;
                // The device's bytes decode to exactly what KvCache::load gives for its own store.
                size_t bad = 0;
                std::vector<float> ref(static_cast<size_t>(head_dim));
                for (int t = 0; t < n_tokens && n_past + t < n_ctx; ++t)
                    for (int h = 0; h < n_head_kv; ++h) {
                        const int64_t pos = n_past + t;
                        size_t m = 0;
                        host.load_k(0, pos, h, ref.data());
                        same_bits(cuda_test::kv_head_from_bytes(q8, &got_k[size_t(pos) * s.row_bytes], h, head_dim).data(),
                                  ref.data(), ref.size(), &m);
                        bad += m;
                        host.load_v(0, pos, h, ref.data());
                        same_bits(cuda_test::kv_head_from_bytes(q8, &got_v[size_t(pos) * s.row_bytes], h, head_dim).data(),
                                  ref.data(), ref.size(), &m);
                        bad += m;
                    }
                char what[64], detail[128];
                std::snprintf(what, sizeof what, "kv_store %s head_dim %d", q8 ? "q8_0" : "f16", head_dim);
                std::snprintf(detail, sizeof detail,
                              "n_past %d of n_ctx %d: bytes %s (other rows untouched), %zu values differ from KvCache::load",
                              n_past, n_ctx, bytes_ok ? "identical" : "DIFFER", bad);
                report(e == cudaSuccess && bytes_ok && bad == 0, what, detail);
                cudaFree(dk_cache), cudaFree(dv_cache), cudaFree(dk), cudaFree(dv), cudaFree(dpast);
            }
}

}  // namespace

int main() {
    if (const int rc = cuda_test::start("cuda ops")) return rc;
    test_rms_norm();
    test_head_rms_norm();
    test_adds();
    test_get_rows();
    test_rope();
    test_kv_store();
    const cudaError_t e = cudaDeviceSynchronize();
    cuda_test::expect(e == cudaSuccess, std::string("device error: ") + cudaGetErrorString(e));
    return cuda_test::finish("cuda ops");
}
