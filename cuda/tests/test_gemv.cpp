// The decode products (gemv.cuh) against the CPU backend, on fresh random data:
//  1. quantize_activations: Q8_K and Q8_0 blocks byte for byte equal to quant::quantize_row_q8_k /
//     quantize_row_q8_0, including magnitude ties (+m/-m, either first, in one lane and across
//     lanes) and an all-zero block (the d = 0 branch), for 1..8 rows and the 16 and 64 rows the
//     MoE kernels quantize (one per chosen expert);
//  2. gemv for IQ1_S, Q8_0, F16, BF16 and F32 weights, ragged row counts, several widths and every
//     token count 1..kGemvMaxTokens, against exec::CpuBackend(1).matmul on the same host bytes, with
//     y poisoned (NaN) before each launch; then every other type the GPU takes (gpu_types.hpp) on
//     random blocks: the fused kernels (Q4_K, Q5_K, Q6_K, IQ4_XS, IQ4_NL, IQ2_XXS, IQ3_XXS, IQ1_M)
//     against the CPU's integer dots as tightly as IQ1_S, the dequantize-then-dot ones against the
//     exact product of the decoded weights and x (they do not quantize x) and, loosely, the CPU; plus matrices that start at a 2-byte (not 16-byte)
//     boundary inside their allocation, rows wider than one position per thread, matrices tall
//     enough that blocks loop over several tiles, and the invalid-argument returns. IQ1_S with 1-2
//     tokens takes the wide-table kernel where it fits (2816, 4096 and 9216 columns here), the
//     single-table one otherwise (256 and 18432 columns, 3+ tokens).
// Exit 77 (ctest: skipped) with a printed reason when no GPU is present. A .cpp (C++20, host
// compiler): the CPU backend's headers use std::span, and every GPU step goes through gemv.cuh.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda_test_util.cuh"
#include "runtime/device_matrix.hpp"
#include "exec/cpu_backend.hpp"
#include "kernels/products/gemv.cuh"
#include "runtime/gpu_types.hpp"
#include "bench/random_blocks.hpp"
#include "quant/convert.hpp"
#include "quant/formats.hpp"
#include "quant/half.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/iq/iq1s_quantize.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant/type_ids.hpp"
#include "quant/type_traits.hpp"

using namespace strata;
using cuda_test::report;

namespace {

// A device allocation freed on scope exit (cudaMalloc is 256-byte aligned).
struct DeviceBuffer {
    void* p = nullptr;
    explicit DeviceBuffer(size_t bytes) {
        if (cudaMalloc(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) p = nullptr;
    }
    ~DeviceBuffer() { cudaFree(p); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    template <class T>
    T* as() const { return static_cast<T*>(p); }
};

const char* type_name(uint32_t t) {
    const quant::TypeTraits* traits = quant::find_type_traits(t);
    return traits ? traits->name : "?";
}

// Whether gemv dots decoded weights with the float x (GemvKind::decode): compared with the exact
// product, not with the CPU's integer dots.
bool float_x_path(uint32_t t) { return cuda::gpu_type(t) && cuda::gpu_type(t)->gemv == cuda::GemvKind::decode; }

// ---- 1. quantized activations ----------------------------------------------------------------

// Random rows with planted ties of the largest magnitude m: in row 0, block 0 has -m at 3 and +m
// at 200 (lanes 0 and 25 of the Q8_K warp), block 1 (if any) +m at 8 and -m at 9 (one lane);
// row 1 (if any) has an all-zero block 0.
std::vector<float> activation_rows(int64_t cols, int n_tokens) {
    std::vector<float> x = cuda_test::normal(size_t(cols) * size_t(n_tokens), 1.5f);
    const float m = 8.0f;  // above every N(0, 1.5) draw of these sizes but for ~1e-7 of them
    x[3] = -m;
    x[200] = m;
    if (cols >= 512) {
        x[256 + 8] = m;
        x[256 + 9] = -m;
    }
    for (size_t i = 0; i < x.size(); ++i)  // no other element reaches m
        if (std::fabs(x[i]) >= m && i != 3 && i != 200 && i != 264 && i != 265) x[i] = 0.5f;
    if (n_tokens > 1) std::fill(x.begin() + cols, x.begin() + cols + 256, 0.0f);
    return x;
}

void test_quantize(uint32_t type, int64_t cols, int n_tokens) {
    const std::vector<float> x = activation_rows(cols, n_tokens);
    const size_t bytes = cuda::gemv_act_bytes(type, cols, n_tokens);
    std::vector<uint8_t> expected(bytes), got(bytes);
    for (int t = 0; t < n_tokens; ++t) {
        const float* xt = x.data() + size_t(t) * size_t(cols);
        if (type == quant::kTypeIQ1_S)
            quant::quantize_row_q8_k(xt, reinterpret_cast<quant::block_q8_K*>(expected.data()) + t * (cols / 256), cols);
        else
            quant::quantize_row_q8_0(xt, reinterpret_cast<quant::block_q8_0*>(expected.data()) + t * (cols / 32), cols);
    }
    float* dx = cuda_test::upload(x);
    DeviceBuffer act(bytes);
    cudaMemset(act.p, 0xa5, bytes);  // poison: every byte must be written
    cudaError_t e = cuda::quantize_activations(type, dx, cols, n_tokens, act.p, nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpy(got.data(), act.p, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    size_t diff = 0;
    for (size_t i = 0; i < bytes; ++i) diff += got[i] != expected[i];
    report(e == cudaSuccess && diff == 0 && bytes > 0,
           std::string("quantize_activations ") + (type == quant::kTypeIQ1_S ? "Q8_K" : "Q8_0") + " cols=" +
               std::to_string(cols) + " tokens=" + std::to_string(n_tokens) + " bytes=" + std::to_string(bytes) +
               " differing=" + std::to_string(diff) + " (" + cudaGetErrorString(e) + ")");
}

// ---- 2. gemv against the CPU backend -----------------------------------------------------------

// Host bytes of a rows x cols matrix of type t, quantized/converted from random floats with lib/quant.
std::vector<uint8_t> host_weights(uint32_t t, int64_t rows, int64_t cols, uint64_t* row_bytes) {
    const std::vector<float> wf = cuda_test::normal(size_t(rows) * size_t(cols), 0.5f);
    std::vector<uint8_t> out;
    const size_t n = wf.size();
    switch (t) {
    case quant::kTypeIQ1_S: {
        *row_bytes = uint64_t(cols / 256) * sizeof(quant::block_iq1_s);
        out.resize(size_t(rows) * *row_bytes);
        const int threads = int(std::max(1u, std::thread::hardware_concurrency()));
        quant::quantize_iq1s(wf.data(), out.data(), rows, cols, nullptr, threads);
        break;
    }
    case quant::kTypeQ8_0:
        *row_bytes = uint64_t(cols / 32) * sizeof(quant::block_q8_0);
        out.resize(size_t(rows) * *row_bytes);
        quant::quantize_row_q8_0(wf.data(), reinterpret_cast<quant::block_q8_0*>(out.data()), int64_t(n));
        break;
    case quant::kTypeF16:
    case quant::kTypeBF16:
        *row_bytes = uint64_t(cols) * 2;
        out.resize(n * 2);
        if (t == quant::kTypeF16) quant::f32_to_f16_row(wf.data(), reinterpret_cast<uint16_t*>(out.data()), int64_t(n));
        else quant::f32_to_bf16_row(wf.data(), reinterpret_cast<uint16_t*>(out.data()), int64_t(n));
        break;
    case quant::kTypeF32:
        *row_bytes = uint64_t(cols) * 4;
        out.resize(n * 4);
        std::memcpy(out.data(), wf.data(), out.size());
        break;
    default:  // the other quantized types: random blocks
        *row_bytes = quant::row_size(t, cols);
        out = cuda::random_matrix(t, rows, cols, cuda_test::rng);
        break;
    }
    return out;
}

// Random IQ1_S bytes (every grid index, scale code and sign reachable) with finite scales: for a
// matrix too tall to quantize from floats quickly.
std::vector<uint8_t> random_iq1s(int64_t rows, int64_t cols, uint64_t* row_bytes) {
    *row_bytes = uint64_t(cols / 256) * sizeof(quant::block_iq1_s);
    std::vector<quant::block_iq1_s> blocks(size_t(rows * (cols / 256)));
    for (auto& b : blocks) {
        for (auto& q : b.qs) q = uint8_t(cuda_test::rng());
        for (auto& h : b.qh) h = uint16_t(cuda_test::rng());
        b.d = quant::f32_to_f16(std::ldexp(float(cuda_test::rng() % 1000 + 1), -12) * ((cuda_test::rng() & 1) ? -1.0f : 1.0f));
    }
    std::vector<uint8_t> out(blocks.size() * sizeof(quant::block_iq1_s));
    std::memcpy(out.data(), blocks.data(), out.size());
    return out;
}

// Tolerances. IQ1_S and Q8_0: both sides form the same per-block integers and the same float term
// per block (checked by the byte-exact activations above); only the order the terms are added in
// differs, an error of a few ulps of the running sum (~1e-7 relative for <= 112 terms), so 1e-5
// relative leaves two orders of margin and still catches one wrong block (~1/sqrt(blocks) ~ 0.1).
// F32/F16/BF16: the same products summed in a different order (CPU: 8-lane or sequential; GPU:
// strided over a warp), ~sqrt(cols) * 2^-24 relative: 1e-5 again. Max abs is taken relative to the
// largest |y| (elements near zero have no meaningful relative error).
constexpr double kTolRelRms = 1e-5, kTolMaxRel = 1e-5;
// The CPU's Q8 activations against the float x of the dequantize-then-dot path: ~5e-3 expected.
constexpr double kTolCpuQuantizedX = 1.5e-2;

// One gemv case: the matrix placed `offset` bytes into a padded allocation.
void run_case(uint32_t type, int64_t rows, int64_t cols, const std::vector<uint8_t>& host, uint64_t row_bytes,
              size_t offset, int n_tokens, exec::CpuBackend& cpu) {
    const std::vector<float> x = cuda_test::normal(size_t(n_tokens) * size_t(cols));
    std::vector<float> expected(size_t(n_tokens) * size_t(rows));
    model::WeightView wv;
    wv.name = "w";
    wv.type = type;
    wv.cols = cols;
    wv.rows = rows;
    wv.row_bytes = row_bytes;
    wv.data = host.data();
    wv.nbytes = host.size();
    cpu.matmul(wv, x.data(), n_tokens, expected.data());
    // The float-x path: held to the exact product of the decoded rows and x (double sums), and to
    // the CPU (which quantizes x: ~0.5% relative noise) only loosely.
    std::vector<float> exact;
    if (float_x_path(type)) {
        exact.resize(expected.size());
        std::vector<float> wrow(static_cast<size_t>(cols));
        for (int64_t r = 0; r < rows; ++r) {
            quant::dequantize_row(type, host.data() + r * row_bytes, wrow.data(), cols);
            for (int t = 0; t < n_tokens; ++t) {
                double s = 0;
                for (int64_t c = 0; c < cols; ++c) s += double(wrow[size_t(c)]) * double(x[size_t(t * cols + c)]);
                exact[size_t(t * rows + r)] = float(s);
            }
        }
    }

    DeviceBuffer wbuf(offset + host.size() + cuda::kDevicePadBytes);
    cudaMemset(wbuf.p, 0x7f, offset + host.size() + cuda::kDevicePadBytes);  // bytes around the matrix: garbage
    cudaMemcpy(wbuf.as<uint8_t>() + offset, host.data(), host.size(), cudaMemcpyHostToDevice);
    cuda::DeviceMatrix w;
    w.type = type;
    w.cols = cols;
    w.rows = rows;
    w.row_bytes = row_bytes;
    w.data = wbuf.as<uint8_t>() + offset;

    float* dx = cuda_test::upload(x);
    const size_t act_bytes = cuda::gemv_act_bytes(type, cols, n_tokens);
    DeviceBuffer act(act_bytes);
    DeviceBuffer y(expected.size() * sizeof(float));
    cudaMemset(y.p, 0xff, expected.size() * sizeof(float));  // NaN poison
    cudaError_t e = cuda::quantize_activations(type, dx, cols, n_tokens, act.p, nullptr);
    if (e == cudaSuccess) e = cuda::gemv(w, dx, act.p, n_tokens, y.as<float>(), nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    std::vector<float> got(expected.size(), std::nanf(""));
    if (e == cudaSuccess) e = cudaMemcpy(got.data(), y.p, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dx);

    struct Err {
        double rel_rms = 0, max_abs = 0, max_ref = 0;
        bool finite = true;
    };
    auto measure = [&](const std::vector<float>& ref) {
        Err r;
        double sd2 = 0, sr2 = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            r.finite = r.finite && std::isfinite(got[i]);
            const double d = double(got[i]) - double(ref[i]);
            sd2 += d * d;
            sr2 += double(ref[i]) * double(ref[i]);
            r.max_abs = std::max(r.max_abs, std::fabs(d));
            r.max_ref = std::max(r.max_ref, std::fabs(double(ref[i])));
        }
        r.rel_rms = sr2 > 0 ? std::sqrt(sd2 / sr2) : std::sqrt(sd2);
        return r;
    };
    const Err m = measure(exact.empty() ? expected : exact);
    bool ok = e == cudaSuccess && m.finite && m.rel_rms <= kTolRelRms && m.max_abs <= kTolMaxRel * std::max(m.max_ref, 1e-30);
    char line[320];
    std::snprintf(line, sizeof line, "gemv %-7s rows=%-5lld cols=%-5lld offset=%-2zu tokens=%d %s rel_rms=%.2e max_abs=%.2e (max|y| %.3g)",
                  type_name(type), (long long)rows, (long long)cols, offset, n_tokens, exact.empty() ? "vs cpu" : "vs exact",
                  m.rel_rms, m.max_abs, m.max_ref);
    std::string text = line;
    if (!exact.empty()) {  // and the CPU, within its activation quantization noise (test_gemm.cpp's bound)
        const Err c = measure(expected);
        ok = ok && c.rel_rms <= kTolCpuQuantizedX;
        std::snprintf(line, sizeof line, "; vs cpu rel_rms=%.2e (<= %.1e)", c.rel_rms, kTolCpuQuantizedX);
        text += line;
    }
    report(ok, text + " " + cudaGetErrorString(e));
}

void test_invalid_arguments() {
    DeviceBuffer buf(4096);
    float* y = buf.as<float>();
    cuda::DeviceMatrix w;
    w.type = quant::kTypeIQ1_S;
    w.cols = 256;
    w.rows = 1;
    w.row_bytes = 50;
    w.data = buf.as<uint8_t>();
    const void* act = buf.p;
    const float* x = buf.as<float>();
    bool ok = cuda::gemv(w, x, act, 0, y, nullptr) == cudaErrorInvalidValue &&
              cuda::gemv(w, x, act, cuda::kGemvMaxTokens + 1, y, nullptr) == cudaErrorInvalidValue;
    cuda::DeviceMatrix bad = w;
    bad.cols = 300;  // not a multiple of 256
    ok = ok && cuda::gemv(bad, x, act, 1, y, nullptr) == cudaErrorInvalidValue;
    bad = w;
    bad.type = quant::kTypeQ8_K;  // not a weight type gemv takes
    ok = ok && cuda::gemv(bad, x, act, 1, y, nullptr) == cudaErrorInvalidValue && !cuda::gemv_supports(quant::kTypeQ8_K);
    bad = w;
    bad.row_bytes = 52;  // not the packed row size
    ok = ok && cuda::gemv(bad, x, act, 1, y, nullptr) == cudaErrorInvalidValue;
    bad.type = quant::kTypeQ4_K;  // a fused type whose kernel reads 4-byte words: 2-byte aligned is refused
    bad.row_bytes = 144;
    bad.data = buf.as<uint8_t>() + 2;
    ok = ok && cuda::gemv(bad, x, act, 1, y, nullptr) == cudaErrorInvalidValue && cuda::gemv_weight_align(quant::kTypeQ4_K) == 4;
    ok = ok && cuda::quantize_activations(quant::kTypeQ8_0, x, 48, 1, buf.p, nullptr) == cudaErrorInvalidValue;
    ok = ok && cuda::quantize_activations(quant::kTypeIQ1_S, x, 256, 0, buf.p, nullptr) == cudaErrorInvalidValue;
    ok = ok && cudaGetLastError() == cudaSuccess;  // nothing was launched
    report(ok, "invalid arguments return cudaErrorInvalidValue");
}

}  // namespace

int main() {
    if (int rc = cuda_test::start("gemv"); rc != 0) return rc;
    // Under compute-sanitizer (STRATA_CUDA_TEST_SMALL=1): every kernel and type on a few small
    // cases that keep the ragged edges; no wide or tall matrices.
    const bool small = cuda_test::small_sizes();
    const std::vector<int64_t> q_cols = small ? std::vector<int64_t>{256, 2816} : std::vector<int64_t>{256, 2816, 7168};
    const std::vector<int> q_rows = small ? std::vector<int>{1, 8, 16} : std::vector<int>{1, 2, 5, 8, 16, 64};
    const std::vector<int64_t> row_counts = small ? std::vector<int64_t>{7, 33} : std::vector<int64_t>{1, 7, 33, 1000};
    const std::vector<int64_t> widths = small ? std::vector<int64_t>{256, 2816} : std::vector<int64_t>{256, 2816, 4096};
    const std::vector<int> token_counts = small ? std::vector<int>{1, 2, 8} : std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8};

    for (const uint32_t type : {uint32_t(quant::kTypeIQ1_S), uint32_t(quant::kTypeQ8_0)})
        for (const int64_t cols : q_cols)
            for (const int n : q_rows) test_quantize(type, cols, n);  // 16, 64: MoE rows

    test_invalid_arguments();

    exec::CpuBackend cpu(1);
    const uint32_t types[] = {quant::kTypeIQ1_S, quant::kTypeQ8_0, quant::kTypeF16, quant::kTypeBF16, quant::kTypeF32};
    for (const uint32_t type : types)
        for (const int64_t rows : row_counts)
            for (const int64_t cols : widths) {
                uint64_t row_bytes = 0;
                const std::vector<uint8_t> host = host_weights(type, rows, cols, &row_bytes);
                // 33 rows: the matrix starts 2 bytes past a 16-byte boundary (4 for F32: scalar path),
                // as a matrix of a stack does.
                const size_t offset = rows == 33 ? (type == quant::kTypeF32 ? 36 : 34) : 0;
                for (const int n : token_counts) run_case(type, rows, cols, host, row_bytes, offset, n, cpu);
            }

    // Wide rows: more 32-weight positions than threads (IQ1_S: several rounds per tile, the
    // activations reloaded per round instead of once per block).
    for (const uint32_t type : {uint32_t(quant::kTypeIQ1_S), uint32_t(quant::kTypeQ8_0), uint32_t(quant::kTypeF32)})
        for (const int64_t cols : small ? std::vector<int64_t>{} : std::vector<int64_t>{9216, 18432}) {
            const int64_t rows = 19;
            uint64_t row_bytes = 0;
            const std::vector<uint8_t> host = host_weights(type, rows, cols, &row_bytes);
            for (const int n : {1, 4, 7, 8}) run_case(type, rows, cols, host, row_bytes, 0, n, cpu);
        }

    // Tall IQ1_S matrices: more tiles than resident blocks, so each block loops and double-buffers.
    for (const int64_t cols : small ? std::vector<int64_t>{} : std::vector<int64_t>{256, 2816}) {
        const int64_t rows = 24001;
        uint64_t row_bytes = 0;
        const std::vector<uint8_t> host = random_iq1s(rows, cols, &row_bytes);
        for (const int n : {1, 3, 7, 8}) run_case(quant::kTypeIQ1_S, rows, cols, host, row_bytes, 2, n, cpu);
    }

    // Every other type the GPU takes, on random blocks: ragged rows, a matrix at an offset that is
    // only as aligned as the kernel needs, widths of an odd number of blocks, tokens 1..8.
    for (const cuda::GpuTypeInfo& g : cuda::kGpuTypes) {
        if (std::find(std::begin(types), std::end(types), g.type) != std::end(types)) continue;
        const int64_t be = quant::find_type_traits(g.type)->block_elements;
        const int64_t odd_cols = be * (be >= 256 ? 11 : 17);  // 2816, 544 or (Q1_0) 2176
        for (const int64_t rows : small ? std::vector<int64_t>{7, 33} : std::vector<int64_t>{7, 33, 300})
            for (const int64_t cols : small ? std::vector<int64_t>{256, odd_cols} : std::vector<int64_t>{256, odd_cols, 4096}) {
                uint64_t row_bytes = 0;
                const std::vector<uint8_t> host = host_weights(g.type, rows, cols, &row_bytes);
                const size_t offset = rows == 33 ? size_t(32 + cuda::gemv_weight_align(g.type)) : 0;
                for (const int n : small ? std::vector<int>{1, 3, 8} : std::vector<int>{1, 2, 3, 5, 8})
                    run_case(g.type, rows, cols, host, row_bytes, offset, n, cpu);
            }
        if (small) continue;
        uint64_t row_bytes = 0;  // tall: the fused kernels' blocks walk many row groups
        const std::vector<uint8_t> host = host_weights(g.type, 5003, 512, &row_bytes);
        for (const int n : {1, 4}) run_case(g.type, 5003, 512, host, row_bytes, 0, n, cpu);
    }

    return cuda_test::finish("gemv");
}
