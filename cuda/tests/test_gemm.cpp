// Prefill products on the GPU (gemm.cuh, matmul.hpp) against the CPU, for every weight type the
// GPU takes (gpu_types.hpp; quantized types on fresh random blocks, qtype_random.hpp):
// dequantize_rows_f16 and f32_to_f16 bit for bit; gemm_mma (the tensor-core path of every
// quantized type), cuBLAS and DeviceMatmul::run (gemv sizes, both prefill paths, ragged rows, a
// weight matrix spanning two cuBLAS panels) against exec::CpuBackend on the same host weights and
// against an exact (double) product of the GPU's own f16 inputs. Outputs are
// NaN-poisoned before every run, so an element a kernel forgot shows up as NaN.
//
// A host .cpp (C++20, like the library code it uses: exec::CpuBackend, matmul.hpp), not a .cu:
// the kernels are in strata_cuda and nvcc compiles this project's .cu files as C++17.
// Exit 77 (ctest: skipped) with a printed reason when no GPU is present; nonzero on a failure.
//
// Tolerances (relative RMS = |gpu - ref|_2 / |ref|_2; max = max |gpu - ref| / rms(ref)):
//  * vs the exact product of the GPU's inputs (f16 activations, f16 weights, double sums): the
//    only difference is float32 accumulation over at most 4096 terms, ~1e-6 relative: bound 1e-4
//    (RMS) and 1e-3 (max). Any indexing or tiling error is far larger.
//  * vs CpuBackend, quantized weights: the CPU quantizes activations to Q8_K (256-blocks), Q8_0
//    or Q8_1 (32-blocks), an error of amax/127/sqrt(12) ~ 0.0066 (Q8_K, amax ~ 2.9 sd) or ~ 0.0049 (Q8_0,
//    amax ~ 2.1 sd) of the activations' RMS; it passes to the products unchanged in relative RMS
//    (random weights), while f16 costs the GPU ~3e-4. Expected ~5e-3..7e-3: bound 1.5e-2 (RMS) and
//    0.1 (max, ~7 sd of the noise over up to 2M outputs).
//  * vs CpuBackend, F32/F16/BF16: the CPU uses the activations as they are; the GPU rounds them
//    (and F32/BF16 weights) to f16, each ~2^-11/sqrt(3) ~ 3e-4 relative: bound 2e-3 and 2e-2.
//  * gemv sizes (n <= 8, another engineer's kernels behind DeviceMatmul::run): the CPU's bounds.
//
// UNTESTED ON A GPU until a device check has run it.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "runtime/cublas_loader.hpp"
#include "runtime/cuda_error.hpp"
#include "cuda_test_util.cuh"
#include "runtime/device_matrix.hpp"
#include "exec/cpu_backend.hpp"
#include "kernels/products/gemm.cuh"
#include "kernels/products/gemv.cuh"
#include "gguf/ggml_types.hpp"
#include "runtime/gpu_types.hpp"
#include "runtime/matmul.hpp"
#include "bench/random_blocks.hpp"
#include "quant/formats.hpp"
#include "quant/half.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/type_ids.hpp"
#include "util/error.hpp"

using namespace strata;
using cuda_test::report;
using cuda_test::rng;

namespace {

// The types of the first version of this test, run on every shape; the others on fewer.
constexpr uint32_t kTypes[] = {quant::kTypeF32, quant::kTypeF16, quant::kTypeBF16, quant::kTypeQ8_0,
                               quant::kTypeIQ1_S};

bool is_float(uint32_t t) { return t == quant::kTypeF32 || t == quant::kTypeF16 || t == quant::kTypeBF16; }

// A weight matrix on the host (GGUF layout) and its device copy (padded as uploads are).
struct Matrix {
    uint32_t type = 0;
    int64_t rows = 0, cols = 0;
    uint64_t row_bytes = 0;
    std::vector<uint8_t> bytes;
    uint8_t* device = nullptr;

    Matrix(uint32_t t, int64_t n_rows, int64_t n_cols)
        : type(t), rows(n_rows), cols(n_cols), row_bytes(quant::row_size(t, n_cols)) {
        bytes.resize(size_t(row_bytes) * size_t(rows));
        if (!is_float(type)) {
            // Random bytes (every code, grid index, scale code and sign occurs), finite scales.
            bytes = cuda::random_matrix(type, rows, cols, rng);
        } else {
            const std::vector<float> values = cuda_test::normal(size_t(rows * cols));
            for (int64_t r = 0; r < rows; ++r)
                quant::quantize_row(type, values.data() + r * cols, bytes.data() + r * row_bytes, cols, nullptr);
        }
        cudaMalloc(&device, bytes.size() + cuda::kDevicePadBytes);
        cudaMemset(device, 0, bytes.size() + cuda::kDevicePadBytes);
        cudaMemcpy(device, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
    }
    ~Matrix() { cudaFree(device); }
    Matrix(const Matrix&) = delete;
    Matrix& operator=(const Matrix&) = delete;

    cuda::DeviceMatrix view() const { return {type, cols, rows, row_bytes, device}; }
    exec::WeightView host_view() const {
        exec::WeightView v;
        v.name = std::string(gguf::ggml_type_name(type)) + " test matrix";
        v.type = type;
        v.cols = cols;
        v.rows = rows;
        v.row_bytes = row_bytes;
        v.data = bytes.data();
        v.nbytes = bytes.size();
        return v;
    }
    // Row r dequantized by the host reference (quant::dequantize_row).
    std::vector<float> row(int64_t r) const {
        std::vector<float> out(static_cast<size_t>(cols));
        quant::dequantize_row(type, bytes.data() + r * row_bytes, out.data(), cols);
        return out;
    }
    std::string name() const {
        return std::string(gguf::ggml_type_name(type)) + " " + std::to_string(rows) + "x" + std::to_string(cols);
    }
};

float round_f16(float v) { return quant::f16_to_f32(quant::f32_to_f16(v)); }

template <class T>
struct DeviceBuffer {
    T* p = nullptr;
    explicit DeviceBuffer(size_t n) { cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)); }
    ~DeviceBuffer() { cudaFree(p); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

void poison(float* d, size_t n) { cudaMemset(d, 0xff, n * sizeof(float)); }  // 0xffffffff: a NaN

// ---------------------------------------------------------------------------------------------

void test_dequantize_rows() {
    for (const cuda::GpuTypeInfo& g : cuda::kGpuTypes) {
        const uint32_t type = g.type;
        for (const auto& [rows, cols, row0, n_rows] : {std::array<int64_t, 4>{300, 512, 37, 200},
                                                       std::array<int64_t, 4>{77, 4096, 0, 77},
                                                       std::array<int64_t, 4>{1000, 256, 999, 1}}) {
            const Matrix m(type, rows, cols);
            DeviceBuffer<__half> out(size_t(n_rows * cols) + 8);
            cudaMemset(out.p, 0xff, (size_t(n_rows * cols) + 8) * sizeof(__half));  // f16 NaN everywhere
            const cudaError_t e = cuda::dequantize_rows_f16(m.view(), row0, n_rows, out.p, nullptr);
            const std::vector<__half> got = cuda_test::download(out.p, size_t(n_rows * cols) + 8);
            size_t mismatches = 0;
            for (int64_t r = 0; r < n_rows; ++r) {
                const std::vector<float> ref = m.row(row0 + r);
                for (int64_t c = 0; c < cols; ++c)
                    mismatches += __half_as_ushort(got[size_t(r * cols + c)]) != quant::f32_to_f16(ref[size_t(c)]);
            }
            size_t overrun = 0;  // the 8 halves past the output keep their poison
            for (size_t i = size_t(n_rows * cols); i < got.size(); ++i) overrun += __half_as_ushort(got[i]) != 0xffff;
            report(e == cudaSuccess && mismatches == 0 && overrun == 0,
                   "dequantize_rows_f16 " + m.name() + " rows [" + std::to_string(row0) + ", " +
                       std::to_string(row0 + n_rows) + "): " + std::to_string(mismatches) + " mismatches, " +
                       std::to_string(overrun) + " written past the end (" + cudaGetErrorString(e) + ")");
        }
    }
    const Matrix m(quant::kTypeQ8_0, 10, 64);
    DeviceBuffer<__half> out(640);
    report(cuda::dequantize_rows_f16(m.view(), 5, 6, out.p, nullptr) == cudaErrorInvalidValue &&
               cuda::dequantize_rows_f16(m.view(), -1, 2, out.p, nullptr) == cudaErrorInvalidValue,
           "dequantize_rows_f16 refuses rows outside the matrix");
}

void test_f32_to_f16() {
    const size_t n = 1000003;
    std::vector<float> x = cuda_test::normal(n, 100.0f);
    x[0] = 70000.0f;  // overflows to infinity
    x[1] = 3e-8f;     // a subnormal half
    x[2] = -0.0f;
    float* dx = cuda_test::upload(x);
    DeviceBuffer<__half> out(n);
    const cudaError_t e = cuda::f32_to_f16(dx, n, out.p, nullptr);
    const std::vector<__half> got = cuda_test::download(out.p, n);
    cudaFree(dx);
    size_t mismatches = 0;
    for (size_t i = 0; i < n; ++i) mismatches += __half_as_ushort(got[i]) != quant::f32_to_f16(x[i]);
    report(e == cudaSuccess && mismatches == 0,
           "f32_to_f16 n=" + std::to_string(n) + ": " + std::to_string(mismatches) + " mismatches");
}

// ---------------------------------------------------------------------------------------------

struct Errors {
    double rel_rms = 0, max_rel = 0;
    size_t nans = 0;
};

Errors compare(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<size_t>& index) {
    Errors e;
    double diff2 = 0, ref2 = 0, max_abs = 0;
    for (size_t i = 0; i < index.size(); ++i) {
        const double g = got[index[i]];
        if (!std::isfinite(g)) {
            ++e.nans;
            continue;
        }
        const double d = g - ref[i];
        diff2 += d * d;
        ref2 += ref[i] * ref[i];
        max_abs = std::max(max_abs, std::abs(d));
    }
    const double rms = std::sqrt(ref2 / double(std::max<size_t>(index.size(), 1)));
    e.rel_rms = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? 1.0 : 0.0);
    e.max_rel = rms > 0 ? max_abs / rms : max_abs;
    return e;
}

// Bounds against the CPU backend for this weight type (see the header comment).
void cpu_bounds(uint32_t type, double& rms, double& max) {
    const bool quantized_activations = !is_float(type);
    rms = quantized_activations ? 1.5e-2 : 2e-3;
    max = quantized_activations ? 0.1 : 2e-2;
}

// y [n][rows] from the GPU against CpuBackend over every element and, when the GPU ran on f16
// inputs (exact_check), against the double product of f16(x) and f16(W) on sampled tokens.
void check_product(const std::string& label, const Matrix& m, const std::vector<float>& x, int64_t n,
                   const std::vector<float>& y, bool exact_check) {
    static exec::CpuBackend cpu(0);  // results do not depend on the thread count (backend.hpp)
    std::vector<float> y_cpu(size_t(n * m.rows));
    cpu.matmul(m.host_view(), x.data(), n, y_cpu.data());
    std::vector<size_t> all(y.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    const std::vector<double> ref_cpu(y_cpu.begin(), y_cpu.end());
    const Errors cpu_err = compare(y, ref_cpu, all);
    double rms_bound = 0, max_bound = 0;
    cpu_bounds(m.type, rms_bound, max_bound);
    bool ok = cpu_err.nans == 0 && cpu_err.rel_rms <= rms_bound && cpu_err.max_rel <= max_bound;
    char line[512];
    std::snprintf(line, sizeof line, "%s %s n=%lld: vs cpu rel rms %.2e (<= %.1e) max %.2e (<= %.1e), %zu NaN",
                  label.c_str(), m.name().c_str(), (long long)n, cpu_err.rel_rms, rms_bound, cpu_err.max_rel, max_bound,
                  cpu_err.nans);
    std::string text = line;

    if (exact_check) {
        // Tokens: first, last, both sides of the 128-token tile edge, and random others (<= 24).
        std::vector<int64_t> tokens = {0, n - 1};
        if (n > 128) tokens.insert(tokens.end(), {127, 128});
        std::uniform_int_distribution<int64_t> pick(0, n - 1);
        while (tokens.size() < size_t(std::min<int64_t>(n, 24))) tokens.push_back(pick(rng));
        std::sort(tokens.begin(), tokens.end());
        tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
        std::vector<float> w16(size_t(m.rows * m.cols));
        for (int64_t r = 0; r < m.rows; ++r) {
            const std::vector<float> row = m.row(r);
            for (int64_t c = 0; c < m.cols; ++c) w16[size_t(r * m.cols + c)] = round_f16(row[size_t(c)]);
        }
        std::vector<double> ref;
        std::vector<size_t> index;
        std::vector<double> x16(static_cast<size_t>(m.cols));
        for (const int64_t t : tokens) {
            for (int64_t c = 0; c < m.cols; ++c) x16[size_t(c)] = round_f16(x[size_t(t * m.cols + c)]);
            for (int64_t r = 0; r < m.rows; ++r) {
                double s = 0;
                const float* wr = w16.data() + r * m.cols;
                for (int64_t c = 0; c < m.cols; ++c) s += double(wr[c]) * x16[size_t(c)];
                ref.push_back(s);
                index.push_back(size_t(t * m.rows + r));
            }
        }
        const Errors ex = compare(y, ref, index);
        const bool exact_ok = ex.nans == 0 && ex.rel_rms <= 1e-4 && ex.max_rel <= 1e-3;
        std::snprintf(line, sizeof line, "; vs exact f16-input product (%zu tokens) rel rms %.2e (<= 1e-4) max %.2e (<= 1e-3)",
                      tokens.size(), ex.rel_rms, ex.max_rel);
        text += line;
        ok = ok && exact_ok;
    }
    report(ok, text);
}

std::vector<float> gpu_product_mma(const Matrix& m, const std::vector<float>& x, int64_t n) {
    float* dx = cuda_test::upload(x);
    DeviceBuffer<__half> x16(x.size());
    DeviceBuffer<float> y(size_t(n * m.rows));
    poison(y.p, size_t(n * m.rows));
    cudaError_t e = cuda::f32_to_f16(dx, x.size(), x16.p, nullptr);
    if (e == cudaSuccess) e = cuda::gemm_mma(m.view(), x16.p, int(n), y.p, nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    cudaFree(dx);
    if (e != cudaSuccess) {
        report(false, "gemm_mma " + m.name() + ": " + cudaGetErrorString(e));
        return {};
    }
    return cuda_test::download(y.p, size_t(n * m.rows));
}

void test_mma() {
    for (const auto& [rows, cols, n] : {std::array<int64_t, 3>{1000, 256, 16}, std::array<int64_t, 3>{1000, 4096, 33},
                                        std::array<int64_t, 3>{4113, 1024, 512}, std::array<int64_t, 3>{129, 2048, 1},
                                        std::array<int64_t, 3>{256, 512, 200}}) {
        const Matrix m(quant::kTypeIQ1_S, rows, cols);
        const std::vector<float> x = cuda_test::normal(size_t(n * cols));
        const std::vector<float> y = gpu_product_mma(m, x, n);
        if (!y.empty()) check_product("gemm_mma", m, x, n, y, true);
    }
    // Every other quantized type: a ragged tile and a wider, token-ragged one.
    for (const cuda::GpuTypeInfo& g : cuda::kGpuTypes) {
        if (is_float(g.type) || g.type == quant::kTypeIQ1_S) continue;
        for (const auto& [rows, cols, n] : {std::array<int64_t, 3>{300, 512, 40}, std::array<int64_t, 3>{129, 1024, 130}}) {
            const Matrix m(g.type, rows, cols);
            const std::vector<float> x = cuda_test::normal(size_t(n * cols));
            const std::vector<float> y = gpu_product_mma(m, x, n);
            if (!y.empty()) check_product("gemm_mma", m, x, n, y, true);
        }
    }
    const Matrix f(quant::kTypeF32, 128, 256);
    const Matrix q(quant::kTypeQ8_0, 128, 96);  // 96 columns: not whole 64-column chunks
    DeviceBuffer<__half> x16(256);
    DeviceBuffer<float> y(128);
    report(cuda::gemm_mma(f.view(), x16.p, 1, y.p, nullptr) == cudaErrorInvalidValue &&
               cuda::gemm_mma(q.view(), x16.p, 1, y.p, nullptr) == cudaErrorInvalidValue && !cuda::gemm_mma_supports(quant::kTypeF16, 4096),
           "gemm_mma refuses float matrices and rows of partial 64-column chunks");
}

// The cuBLAS path by hand for IQ1_S (DeviceMatmul::run may choose the MMA kernel for it): the whole
// matrix dequantized, one gemm_f16 into a y with a row stride wider than the product (ldy).
void test_cublas_direct() {
    std::string why;
    cuda::Cublas* cublas = cuda::Cublas::get(&why);
    if (!cublas) {
        report(false, "cuBLAS could not be loaded: " + why);
        return;
    }
    std::printf("cuBLAS version %d\n", cublas->version());
    const int64_t rows = 1000, cols = 4096, n = 33, ldy = rows + 24;
    const Matrix m(quant::kTypeIQ1_S, rows, cols);
    const std::vector<float> x = cuda_test::normal(size_t(n * cols));
    float* dx = cuda_test::upload(x);
    DeviceBuffer<__half> x16(x.size()), w16(size_t(rows * cols));
    DeviceBuffer<float> y(size_t(n * ldy));
    poison(y.p, size_t(n * ldy));
    cudaError_t e = cuda::f32_to_f16(dx, x.size(), x16.p, nullptr);
    if (e == cudaSuccess) e = cuda::dequantize_rows_f16(m.view(), 0, rows, w16.p, nullptr);
    if (e == cudaSuccess) e = cublas->gemm_f16(w16.p, x16.p, int(rows), int(n), int(cols), y.p, int(ldy), nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    cudaFree(dx);
    if (e != cudaSuccess) {
        report(false, std::string("cublas gemm_f16: ") + cudaGetErrorString(e));
        return;
    }
    const std::vector<float> padded = cuda_test::download(y.p, size_t(n * ldy));
    std::vector<float> packed(size_t(n * rows));
    size_t gap_written = 0;  // the 24 columns past each row of the product keep their poison
    for (int64_t t = 0; t < n; ++t) {
        std::copy_n(padded.begin() + t * ldy, rows, packed.begin() + t * rows);
        for (int64_t r = rows; r < ldy; ++r) gap_written += !std::isnan(padded[size_t(t * ldy + r)]);
    }
    report(gap_written == 0, "cublas gemm_f16 leaves y past m alone (" + std::to_string(gap_written) + " written)");
    check_product("cublas gemm_f16", m, x, n, packed, true);
}

void test_device_matmul() {
    const cuda::MatmulLimits limits{4096, 8209, 512};
    cudaStream_t stream = nullptr;
    cudaStreamCreate(&stream);
    std::printf("DeviceMatmul workspace for %lld cols, %lld rows, %lld tokens: %llu bytes\n",
                (long long)limits.max_cols, (long long)limits.max_rows, (long long)limits.max_tokens,
                (unsigned long long)cuda::DeviceMatmul::workspace_bytes(limits));
    cuda::DeviceMatmul mm(limits, stream);
    std::string why;
    if (!mm.has_cublas(&why)) std::printf("DeviceMatmul runs without cuBLAS: %s\n", why.c_str());

    struct Case {
        uint32_t type;
        int64_t rows, cols, n;
    };
    std::vector<Case> cases;
    for (const uint32_t type : kTypes)
        for (const auto& [rows, cols, n] : {std::array<int64_t, 3>{1000, 256, 16}, std::array<int64_t, 3>{4113, 4096, 33},
                                            std::array<int64_t, 3>{1000, 1024, 512}, std::array<int64_t, 3>{1000, 512, 5}})
            cases.push_back({type, rows, cols, n});
    for (const cuda::GpuTypeInfo& g : cuda::kGpuTypes) {
        if (std::find(std::begin(kTypes), std::end(kTypes), g.type) != std::end(kTypes)) continue;
        for (const auto& [rows, cols, n] : {std::array<int64_t, 3>{1000, 256, 16}, std::array<int64_t, 3>{1000, 1024, 40},
                                            std::array<int64_t, 3>{300, 512, 5}})
            cases.push_back({g.type, rows, cols, n});
    }
    cases.push_back({quant::kTypeIQ1_S, 4113, 4096, 512});
    cases.push_back({quant::kTypeIQ1_S, 4113, 4096, 300});  // the 256..511 bucket: measured afresh
    cases.push_back({quant::kTypeQ8_0, 8209, 4096, 33});    // two f16 weight panels (8192 rows each)
    cases.push_back({quant::kTypeIQ1_S, 1000, 4096, 8});
    cases.push_back({quant::kTypeIQ4_NL, 300, 96, 20});  // no tensor-core path: cuBLAS, or gemv by eights

    for (const Case& c : cases) {
        const Matrix m(c.type, c.rows, c.cols);
        const std::vector<float> x = cuda_test::normal(size_t(c.n * c.cols));
        float* dx = cuda_test::upload(x);
        DeviceBuffer<float> y(size_t(c.n * c.rows));
        poison(y.p, size_t(c.n * c.rows));
        std::string error;
        try {
            mm.run(m.view(), dx, c.n, y.p);
            cuda::check(cudaStreamSynchronize(stream), "test: cudaStreamSynchronize");
        } catch (const Error& e) {
            error = e.what();
        }
        cudaFree(dx);
        if (!error.empty()) {
            report(false, "DeviceMatmul::run " + m.name() + " n=" + std::to_string(c.n) + ": " + error);
            continue;
        }
        // Prefill sizes run on f16 inputs (held to the exact product of those too), unless neither
        // cuBLAS nor the tensor-core kernel takes the matrix: then gemv runs them by eights.
        const bool prefill = c.n > cuda::kGemvMaxTokens && (mm.has_cublas() || cuda::gemm_mma_supports(c.type, c.cols));
        check_product(prefill ? "DeviceMatmul::run" : "DeviceMatmul::run (gemv)", m, x, c.n,
                      cuda_test::download(y.p, size_t(c.n * c.rows)), prefill);
    }
    std::printf("DeviceMatmul choices:\n%s", mm.chooser().describe().c_str());

    // Shapes beyond the limits and unsupported types are errors, not crashes.
    const Matrix wide(quant::kTypeIQ1_S, 16, 4352);
    const Matrix ok(quant::kTypeIQ1_S, 16, 256);
    DeviceBuffer<float> dx(size_t(513 * 4352)), y(size_t(513 * 16));
    auto throws = [&](const cuda::DeviceMatrix& w, int64_t n, Status want) {
        try {
            mm.run(w, dx.p, n, y.p);
        } catch (const Error& e) {
            return e.status() == want;
        }
        return false;
    };
    cuda::DeviceMatrix q4 = ok.view();
    q4.type = quant::kTypeQ8_K;  // an activation format: not a weight type the GPU takes
    report(throws(wide.view(), 16, Status::invalid_argument) && throws(ok.view(), 513, Status::invalid_argument) &&
               throws(ok.view(), 0, Status::invalid_argument) && throws(q4, 16, Status::unsupported),
           "DeviceMatmul::run refuses shapes beyond its limits and unsupported types");
    cudaStreamDestroy(stream);
}

}  // namespace

int main() {
    if (const int skip = cuda_test::start("cuda gemm tests")) return skip;
    try {
        test_dequantize_rows();
        test_f32_to_f16();
        test_mma();
        test_cublas_direct();
        test_device_matmul();
    } catch (const std::exception& e) {
        report(false, std::string("exception: ") + e.what());
    }
    return cuda_test::finish("cuda gemm tests");
}
