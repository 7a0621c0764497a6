// The kernel benchmark suite (kernel_bench.hpp): the ceilings, the GEMV, prefill-product and
// attention rows, the small ops and the run; the deepseek2 / Kimi rows live in kernel_bench_mla.cpp,
// kernel_bench_kda.cpp and kernel_bench_moe.cpp. UNTESTED ON A GPU until a device check has run it.
#include "kernel_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "kernels/attention/attention.cuh"
#include "bandwidth.cuh"
#include "bench_support.hpp"
#include "runtime/cublas_loader.hpp"
#include "runtime/cuda_error.hpp"
#include "runtime/device_matrix.hpp"
#include "kernels/products/gemm.cuh"
#include "kernels/products/gemv.cuh"
#include "gguf/ggml_types.hpp"
#include "kernel_bench_device.hpp"
#include "kernel_bench_suite.hpp"
#include "runtime/matmul.hpp"
#include "kernels/ops/model_ops.cuh"
#include "kernels/ops/ops.cuh"
#include "quant/formats.hpp"
#include "quant/type_ids.hpp"
#include "util/error.hpp"

namespace strata::cuda {

namespace kernel_suite {

namespace {

constexpr double kGemvGoalPercent = 85;
constexpr double kPrefillGoalPercent = 60;

// Decode and prefill products of Llama-3-8B-like (4096, 14336) and Kimi/DeepSeek-like (7168,
// 18432) layers, rows x cols = outputs x inputs.
constexpr Shape kShapes[] = {{4096, 4096}, {4096, 14336}, {14336, 4096}, {7168, 18432}, {18432, 7168}};
constexpr Shape kOneShape = {4096, 14336};  // where the extra types and batch sizes run
// Issue 15's GEMV shapes for the other types of a Kimi release (rows x cols).
constexpr Shape kSquareShape = {4096, 4096};
constexpr Shape kKimiShape = {7168, 2048};
constexpr uint32_t kKimiTypes[] = {quant::kTypeIQ1_M, quant::kTypeIQ2_XXS, quant::kTypeIQ3_XXS, quant::kTypeIQ4_XS,
                                   quant::kTypeQ4_K,  quant::kTypeQ5_K,    quant::kTypeQ6_K,    quant::kTypeQ8_0,
                                   quant::kTypeIQ4_NL};

}  // namespace

Suite::Suite(const KernelBenchOptions& o) : o_(o), rng_(std::random_device{}() * 0x100000001ull + 1) {
    check(cudaGetDevice(&device_), "cudaGetDevice");
    int l2 = 0;
    check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_), "cudaDeviceGetAttribute (L2 size)");
    l2_bytes_ = uint64_t(std::max(l2, 0));
    // At least 4x the L2 (50 MB on an H200), and never less than 64 MiB.
    rotate_bytes_ = std::max<uint64_t>(4 * l2_bytes_, uint64_t(64) << 20);
    // A blocking stream: the setup's plain cudaMemcpy / cudaMemset calls (legacy default stream,
    // some of them asynchronous to the host) are ordered before every timed launch.
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    sink_ = DeviceBuffer(sizeof(unsigned int));
    seed_ = rng_.next();
    rng_ = bench::FastRng(seed_);
}

Suite::~Suite() {
    if (stream_) cudaStreamDestroy(stream_);
}

Replicas Suite::replicated(const void* host, uint64_t bytes) {
    Replicas r;
    r.bytes = bytes;
    r.stride = round_up(std::max<uint64_t>(bytes, 1), kAlign);
    r.copies = copies_for(bytes, rotate_bytes_);
    r.buffer = DeviceBuffer(r.stride * uint64_t(r.copies));
    bench::upload(r.buffer, 0, host, bytes);
    for (int c = 1; c < r.copies; ++c)
        check(cudaMemcpy(r.buffer.get<uint8_t>() + uint64_t(c) * r.stride, r.buffer.get(), bytes,
                         cudaMemcpyDeviceToDevice),
              "cudaMemcpy (replica)");
    check(cudaDeviceSynchronize(), "replica upload");
    return r;
}

MatrixSet Suite::matrices(uint32_t type, Shape s) {
    MatrixSet m;
    m.type = type;
    m.shape = s;
    m.row_bytes = quant::row_size(type, s.cols);
    m.stride = round_up(m.bytes() + kDevicePadBytes, kAlign);
    m.copies = copies_for(m.bytes(), rotate_bytes_);
    m.buffer = DeviceBuffer(m.stride * uint64_t(m.copies));
    // One random matrix uploaded once, then copied on the device: the copies hold the same values
    // at different addresses, which is all the rotation needs (caches key on addresses).
    const std::vector<uint8_t> host = bench::random_matrix_bytes(type, s.rows, s.cols, rng_);
    bench::upload(m.buffer, 0, host.data(), host.size());
    check(cudaMemset(m.buffer.get<uint8_t>() + m.bytes(), 0, m.stride - m.bytes()), "cudaMemset (padding)");
    for (int c = 1; c < m.copies; ++c)
        check(cudaMemcpy(m.buffer.get<uint8_t>() + uint64_t(c) * m.stride, m.buffer.get(), m.stride,
                         cudaMemcpyDeviceToDevice),
              "cudaMemcpy (weight copy)");
    check(cudaDeviceSynchronize(), "weight upload");
    return m;
}

void Suite::add(json row) {
    std::string line = row["name"].get<std::string>() + ": " + fixed(row["time_s"].get<double>() * 1e6, 2) + " us";
    if (row.contains("figure"))
        line += ", " + fixed(row["figure"].get<double>(), 2) + " " + row["figure_unit"].get<std::string>();
    if (row.contains("ceiling") && row["ceiling"].is_number())
        line += " of " + fixed(row["ceiling"].get<double>(), 2) + " (" + row["ceiling_name"].get<std::string>() +
                "): " + fixed(row["percent_of_ceiling"].get<double>(), 1) + "%";
    if (row.contains("output_finite") && !row["output_finite"].get<bool>()) line += "  OUTPUT NOT FINITE";
    log(line);
    rows_.push_back(std::move(row));
}

json Suite::bandwidth_row(const std::string& name, const char* group, const Timing& t, double bytes,
                          const char* counted) {
    json row = {{"name", name}, {"group", group}};
    row.update(timing_json(t));
    row["bytes_per_launch"] = bytes;
    row["bytes_counted"] = counted;
    row["figure_unit"] = "GB/s";
    row["figure"] = t.median_s > 0 ? bytes / t.median_s / 1e9 : 0.0;
    row["ceiling_name"] = "stream_read";
    row["ceiling"] = stream_gbps_ > 0 ? json(stream_gbps_) : json(nullptr);
    row["percent_of_ceiling"] = stream_gbps_ > 0 ? json(100 * row["figure"].get<double>() / stream_gbps_) : json(nullptr);
    row["percent_of_device_copy"] =
        copy_traffic_gbps_ > 0 ? json(100 * row["figure"].get<double>() / copy_traffic_gbps_) : json(nullptr);
    return row;
}

json Suite::flops_row(const std::string& name, const char* group, const Timing& t, double flops, double ceiling,
                      const std::string& ceiling_name, double goal_percent) {
    json row = {{"name", name}, {"group", group}};
    row.update(timing_json(t));
    row["flops_per_launch"] = flops;
    row["figure_unit"] = "TFLOP/s";
    row["figure"] = t.median_s > 0 ? flops / t.median_s / 1e12 : 0.0;
    row["ceiling_name"] = ceiling_name;
    row["ceiling"] = ceiling > 0 ? json(ceiling) : json(nullptr);
    row["percent_of_ceiling"] = ceiling > 0 ? json(100 * row["figure"].get<double>() / ceiling) : json(nullptr);
    if (goal_percent > 0) row["goal_percent"] = goal_percent;
    return row;
}

// The streaming-read kernel over a buffer far larger than L2, and a device-to-device copy.
void Suite::ceilings() {
    guarded("stream_read", [&] {
        const uint64_t bytes = round_up(std::max<uint64_t>(uint64_t(o_.quick ? 512 : 1024) << 20, 8 * l2_bytes_), 16);
        DeviceBuffer buf(bytes);
        check(fill_random_words(buf.get(), bytes, seed_ ^ 0x5354524541ull, stream_), "fill_random_words");
        check(cudaMemsetAsync(sink_.get(), 0, sizeof(unsigned int), stream_), "cudaMemsetAsync");
        const Timing t = time("stream_read", [&](int64_t) {
            return stream_read(buf.get(), bytes, sink_.get<unsigned int>(), stream_);
        });
        stream_gbps_ = double(bytes) / t.median_s / 1e9;
        json c = {{"name", "stream_read"},
                  {"what", "every byte of one buffer read once with 16-byte loads and XOR-folded (bandwidth.cuh)"}};
        c.update(timing_json(t));
        c["bytes_per_launch"] = bytes;
        c["gb_per_s"] = stream_gbps_;
        ceilings_["stream_read"] = c;
        log("ceiling stream_read (" + std::to_string(bytes >> 20) + " MiB): " + fixed(stream_gbps_, 1) + " GB/s");
    });
    guarded("device_copy", [&] {
        const uint64_t bytes = std::max<uint64_t>(uint64_t(o_.quick ? 256 : 512) << 20, 4 * l2_bytes_);
        DeviceBuffer src(bytes), dst(bytes);
        check(fill_random_words(src.get(), bytes, seed_ ^ 0x434f5059ull, stream_), "fill_random_words");
        const Timing t = time("cudaMemcpyAsync device to device", [&](int64_t) {
            return cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream_);
        });
        copy_traffic_gbps_ = 2.0 * double(bytes) / t.median_s / 1e9;
        json c = {{"name", "device_copy"},
                  {"what", "cudaMemcpyAsync device to device; traffic counts the bytes read plus the bytes written"}};
        c.update(timing_json(t));
        c["bytes_copied_per_launch"] = bytes;
        c["copied_gb_per_s"] = double(bytes) / t.median_s / 1e9;
        c["traffic_gb_per_s"] = copy_traffic_gbps_;
        ceilings_["device_copy"] = c;
        log("ceiling device copy (" + std::to_string(bytes >> 20) + " MiB): " + fixed(copy_traffic_gbps_, 1) +
            " GB/s read+write");
    });
}

void Suite::gemv_rows(uint32_t type, Shape s, std::span<const int> tokens, bool with_goal) {
    auto name_of = [&](int t) {
        return std::string("gemv ") + gguf::ggml_type_name(type) + " " + shape_text(s) + " tokens=" + std::to_string(t);
    };
    if (std::none_of(tokens.begin(), tokens.end(), [&](int t) { return wanted(name_of(t)); }) || lost_) return;
    guarded(std::string("gemv ") + gguf::ggml_type_name(type) + " " + shape_text(s) + " setup", [&] {
        const MatrixSet w = matrices(type, s);
        const std::vector<float> x_host = bench::random_floats(size_t(kGemvMaxTokens) * size_t(s.cols), rng_);
        DeviceBuffer x(x_host.size() * sizeof(float));
        bench::upload(x, 0, x_host.data(), x.bytes());
        DeviceBuffer act(gemv_act_bytes(type, s.cols, kGemvMaxTokens));
        DeviceBuffer y(size_t(kGemvMaxTokens) * size_t(s.rows) * sizeof(float));
        for (int t : tokens) {
            const std::string name = name_of(t);
            if (!wanted(name)) continue;
            guarded(name, [&] {
                const Timing q = time("quantize_activations", [&](int64_t) {
                    return quantize_activations(type, x.get<float>(), s.cols, t, act.get(), stream_);
                });
                bench::poison(y.get(), y.bytes(), stream_);
                const Timing g = time("gemv", [&](int64_t k) {
                    return gemv(w.at(k), x.get<float>(), act.get(), t, y.get<float>(), stream_);
                });
                json row = bandwidth_row(name, "gemv", g, double(w.bytes()),
                                         "the weight matrix's bytes (activations and outputs not counted)");
                row["kernel"] = "gemv";
                row["type"] = gguf::ggml_type_name(type);
                row["rows"] = s.rows;
                row["cols"] = s.cols;
                row["tokens"] = t;
                row["weight_copies_rotated"] = w.copies;
                row["rotated_bytes"] = double(w.bytes()) * w.copies;
                if (with_goal) row["goal_percent"] = kGemvGoalPercent;
                row["quantize_activations_s"] = q.median_s;
                row["quantize_activations_samples_s"] = q.samples_s;
                row["output_finite"] = bench::all_finite(y.get<float>(), size_t(t) * size_t(s.rows));
                add(std::move(row));
            });
        }
    });
}

namespace {

// The path DeviceMatmul's chooser took for this shape, read from its describe() line
// ("type rows x cols, tokens bucket: path (times)").
std::string chosen_path(const std::string& described, Shape s) {
    const std::string key = std::to_string(s.rows) + " x " + std::to_string(s.cols);
    size_t at = 0;
    while (at < described.size()) {
        const size_t end = std::min(described.find('\n', at), described.size());
        const std::string line = described.substr(at, end - at);
        if (line.find(key) != std::string::npos) {
            const size_t colon = line.find(": ");
            if (colon != std::string::npos) {
                const std::string rest = line.substr(colon + 2);
                return rest.substr(0, rest.find(' '));
            }
        }
        at = end + 1;
    }
    return "unknown";
}

}  // namespace

void Suite::prefill_rows(uint32_t type, Shape s, std::span<const int> tokens) {
    const std::string base = std::string("prefill ") + gguf::ggml_type_name(type) + " " + shape_text(s);
    auto name_of = [&](const char* path, int t) { return base + " tokens=" + std::to_string(t) + " " + path; };
    bool any = false;
    for (int t : tokens)
        for (const char* p : {"cublas_f16", "mma", "dequant+cublas", "DeviceMatmul"}) any = any || wanted(name_of(p, t));
    if (!any || lost_) return;
    guarded(base + " setup", [&] {
        const int max_t = *std::max_element(tokens.begin(), tokens.end());
        const MatrixSet w = matrices(type, s);
        const std::vector<float> x_host = bench::random_floats(size_t(max_t) * size_t(s.cols), rng_);
        DeviceBuffer x(x_host.size() * sizeof(float));
        bench::upload(x, 0, x_host.data(), x.bytes());
        DeviceBuffer x16(x_host.size() * sizeof(__half));
        check(f32_to_f16(x.get<float>(), x_host.size(), x16.get<__half>(), stream_), "f32_to_f16");
        DeviceBuffer y(size_t(max_t) * size_t(s.rows) * sizeof(float));
        const size_t w16_bytes = size_t(s.rows) * size_t(s.cols) * sizeof(__half);
        std::string cublas_why;
        Cublas* cublas = Cublas::get(&cublas_why);
        DeviceBuffer w16, panel16;
        if (cublas) {
            // The ceiling's weights: the same matrix dequantized once (its values are realistic).
            w16 = DeviceBuffer(w16_bytes);
            panel16 = DeviceBuffer(w16_bytes);
            check(dequantize_rows_f16(w.at(0), 0, s.rows, w16.get<__half>(), stream_), "dequantize_rows_f16");
        }
        for (int t : tokens) {
            bool any_t = false;
            for (const char* p : {"cublas_f16", "mma", "dequant+cublas", "DeviceMatmul"})
                any_t = any_t || wanted(name_of(p, t));
            if (!any_t) continue;
            const double flops = 2.0 * double(s.rows) * double(s.cols) * double(t);
            double ceiling = 0;
            auto common = [&](json& row, const char* path) {
                row["kernel"] = path;
                row["type"] = gguf::ggml_type_name(type);
                row["rows"] = s.rows;
                row["cols"] = s.cols;
                row["tokens"] = t;
                row["weight_copies_rotated"] = w.copies;
            };
            const std::string ceiling_name = "cublas_f16 " + shape_text(s) + " tokens=" + std::to_string(t);
            guarded(name_of("cublas_f16", t), [&] {
                if (!cublas) {
                    errors_.push_back({{"name", name_of("cublas_f16", t)}, {"error", "no cuBLAS: " + cublas_why}});
                    return;
                }
                bench::poison(y.get(), y.bytes(), stream_);
                const Timing g = time("cuBLAS f16 GEMM", [&](int64_t) {
                    return cublas->gemm_f16(w16.get<__half>(), x16.get<__half>(), int(s.rows), t, int(s.cols),
                                            y.get<float>(), int(s.rows), stream_);
                });
                ceiling = flops / g.median_s / 1e12;
                best_cublas_tflops_ = std::max(best_cublas_tflops_, ceiling);
                json row = flops_row(name_of("cublas_f16", t), "prefill", g, flops, 0, "", 0);
                common(row, "cublas_f16");
                row["what"] = "the ceiling: cublasGemmEx f16 x f16 -> f32 on weights already in f16 (one copy)";
                row["output_finite"] = bench::all_finite(y.get<float>(), size_t(t) * size_t(s.rows));
                if (wanted(name_of("cublas_f16", t))) add(std::move(row));
            });
            if (wanted(name_of("mma", t)))
                guarded(name_of("mma", t), [&] {
                    bench::poison(y.get(), y.bytes(), stream_);
                    const Timing g = time("gemm_mma", [&](int64_t k) {
                        return gemm_mma(w.at(k), x16.get<__half>(), t, y.get<float>(), stream_);
                    });
                    json row = flops_row(name_of("mma", t), "prefill", g, flops, ceiling, ceiling_name, kPrefillGoalPercent);
                    common(row, "mma");
                    row["output_finite"] = bench::all_finite(y.get<float>(), size_t(t) * size_t(s.rows));
                    add(std::move(row));
                });
            if (wanted(name_of("dequant+cublas", t)))
                guarded(name_of("dequant+cublas", t), [&] {
                    if (!cublas) {
                        errors_.push_back(
                            {{"name", name_of("dequant+cublas", t)}, {"error", "no cuBLAS: " + cublas_why}});
                        return;
                    }
                    const Timing d = time("dequantize_rows_f16", [&](int64_t k) {
                        return dequantize_rows_f16(w.at(k), 0, s.rows, panel16.get<__half>(), stream_);
                    });
                    bench::poison(y.get(), y.bytes(), stream_);
                    const Timing g = time("dequantize_rows_f16 + cuBLAS", [&](int64_t k) {
                        if (cudaError_t e = dequantize_rows_f16(w.at(k), 0, s.rows, panel16.get<__half>(), stream_);
                            e != cudaSuccess)
                            return e;
                        return cublas->gemm_f16(panel16.get<__half>(), x16.get<__half>(), int(s.rows), t, int(s.cols),
                                                y.get<float>(), int(s.rows), stream_);
                    });
                    json row = flops_row(name_of("dequant+cublas", t), "prefill", g, flops, ceiling, ceiling_name,
                                         kPrefillGoalPercent);
                    common(row, "dequant+cublas");
                    row["what"] = "the whole matrix dequantized to f16, then one cuBLAS GEMM (both timed)";
                    row["dequantize_s"] = d.median_s;
                    row["dequantize_samples_s"] = d.samples_s;
                    row["output_finite"] = bench::all_finite(y.get<float>(), size_t(t) * size_t(s.rows));
                    add(std::move(row));
                });
            if (wanted(name_of("DeviceMatmul", t)))
                guarded(name_of("DeviceMatmul", t), [&] {
                    MatmulLimits limits;
                    limits.max_cols = s.cols;
                    limits.max_rows = s.rows;
                    limits.max_tokens = t;
                    DeviceMatmul mm(limits, stream_);
                    mm.run(w.at(0), x.get<float>(), t, y.get<float>());  // the first sight measures the paths
                    check(cudaStreamSynchronize(stream_), "DeviceMatmul first run");
                    bench::poison(y.get(), y.bytes(), stream_);
                    const Timing g = time("DeviceMatmul::run", [&](int64_t k) {
                        mm.run(w.at(k), x.get<float>(), t, y.get<float>());
                        return cudaSuccess;
                    });
                    json row = flops_row(name_of("DeviceMatmul", t), "prefill", g, flops, ceiling, ceiling_name,
                                         kPrefillGoalPercent);
                    common(row, "DeviceMatmul");
                    const std::string described = mm.chooser().describe();
                    row["path_chosen"] = chosen_path(described, s);
                    row["chooser"] = described;
                    row["what"] = "f32 activations in: conversion/quantization and the measured path choice included";
                    row["output_finite"] = bench::all_finite(y.get<float>(), size_t(t) * size_t(s.rows));
                    add(std::move(row));
                });
        }
    });
}

// Llama-3-8B-like attention: 32 query heads, 8 KV heads of dim 128, an f16 cache.
void Suite::attention_rows() {
    AttentionShape base;
    base.n_head = 32;
    base.n_head_kv = 8;
    base.head_dim = 128;
    base.kv_q8_0 = 0;
    base.row_bytes = uint64_t(base.n_head_kv) * uint64_t(base.head_dim) * sizeof(__half);
    base.scale = 1.0f / std::sqrt(float(base.head_dim));
    const std::string heads = " (32 heads, 8 kv heads, dim 128, f16 cache)";

    for (int64_t n_ctx : {int64_t(4096), int64_t(32768)}) {
        const std::string name = "attention decode n_ctx=" + std::to_string(n_ctx) + heads;
        if (!wanted(name) || lost_) continue;
        guarded(name, [&] {
            AttentionShape s = base;
            s.n_ctx = n_ctx;
            const uint64_t layer_bytes = uint64_t(n_ctx) * s.row_bytes;  // K (or V) of one layer
            const uint64_t stride = round_up(layer_bytes, kAlign);
            const int layers = copies_for(2 * layer_bytes, rotate_bytes_);
            DeviceBuffer k(stride * uint64_t(layers)), v(stride * uint64_t(layers));
            {
                const std::vector<uint16_t> kh = bench::random_halves(layer_bytes / 2, rng_);
                const std::vector<uint16_t> vh = bench::random_halves(layer_bytes / 2, rng_);
                bench::upload(k, 0, kh.data(), layer_bytes);
                bench::upload(v, 0, vh.data(), layer_bytes);
            }
            for (int l = 1; l < layers; ++l) {
                check(cudaMemcpy(k.get<uint8_t>() + uint64_t(l) * stride, k.get(), layer_bytes, cudaMemcpyDeviceToDevice),
                      "cudaMemcpy (cache copy)");
                check(cudaMemcpy(v.get<uint8_t>() + uint64_t(l) * stride, v.get(), layer_bytes, cudaMemcpyDeviceToDevice),
                      "cudaMemcpy (cache copy)");
            }
            const int32_t n_past_host = int32_t(n_ctx - 1);  // the new token is the last cached position
            DeviceBuffer n_past(sizeof(int32_t));
            bench::upload(n_past, 0, &n_past_host, sizeof n_past_host);
            const size_t width = size_t(s.n_head) * size_t(s.head_dim);
            const std::vector<float> q_host = bench::random_floats(width, rng_);
            DeviceBuffer q(width * sizeof(float)), out(width * sizeof(float));
            bench::upload(q, 0, q_host.data(), q.bytes());
            DeviceBuffer ws(attention_workspace_bytes(s, 1));
            bench::poison(out.get(), out.bytes(), stream_);
            const Timing t = time("attention decode", [&](int64_t i) {
                const uint64_t off = uint64_t(i % layers) * stride;
                return attention(q.get<float>(), k.get<uint8_t>() + off, v.get<uint8_t>() + off, s, 1,
                                 n_past.get<int32_t>(), ws.get(), out.get<float>(), stream_);
            });
            json row = bandwidth_row(name, "attention", t, 2.0 * double(layer_bytes),
                                     "K and V rows of every cached position (query and output not counted)");
            row["kernel"] = "attention";
            row["n_ctx"] = n_ctx;
            row["tokens"] = 1;
            row["cache_copies_rotated"] = layers;
            row["output_finite"] = bench::all_finite(out.get<float>(), width);
            add(std::move(row));
        });
    }

    const int n = 512;
    const std::string name = "attention prefill tokens=512" + heads;
    if (!wanted(name) || lost_) return;
    guarded(name, [&] {
        AttentionShape s = base;
        s.n_ctx = n;
        const uint64_t layer_bytes = uint64_t(n) * s.row_bytes;
        DeviceBuffer k(layer_bytes), v(layer_bytes);
        const std::vector<uint16_t> kh = bench::random_halves(layer_bytes / 2, rng_);
        const std::vector<uint16_t> vh = bench::random_halves(layer_bytes / 2, rng_);
        bench::upload(k, 0, kh.data(), layer_bytes);
        bench::upload(v, 0, vh.data(), layer_bytes);
        const int32_t zero = 0;
        DeviceBuffer n_past(sizeof(int32_t));
        bench::upload(n_past, 0, &zero, sizeof zero);
        const size_t width = size_t(s.n_head) * size_t(s.head_dim);
        const std::vector<float> q_host = bench::random_floats(width * n, rng_);
        DeviceBuffer q(q_host.size() * sizeof(float)), out(q_host.size() * sizeof(float));
        bench::upload(q, 0, q_host.data(), q.bytes());
        DeviceBuffer ws(attention_workspace_bytes(s, n));
        bench::poison(out.get(), out.bytes(), stream_);
        const Timing t = time("attention prefill", [&](int64_t) {
            return attention(q.get<float>(), k.get<uint8_t>(), v.get<uint8_t>(), s, n, n_past.get<int32_t>(), ws.get(),
                             out.get<float>(), stream_);
        });
        // Causal: token i attends to i + 1 positions; q.k and p.v each 2 * head_dim flops a pair.
        const double flops = 4.0 * base.head_dim * base.n_head * (double(n) * (n + 1) / 2);
        json row = flops_row(name, "attention", t, flops, best_cublas_tflops_,
                             "the best cuBLAS f16 GEMM rate of this run", 0);
        row["kernel"] = "attention";
        row["tokens"] = n;
        row["flops_counted"] = "4 * head_dim * n_head * n(n+1)/2: q.k and p.v over the causal triangle";
        row["output_finite"] = bench::all_finite(out.get<float>(), q_host.size());
        add(std::move(row));
    });
}

void Suite::rms_norm_rows() {
    const int n_rows = 8;
    const int64_t n = 7168;
    const std::string name = "rms_norm 8x7168";
    if (!wanted(name) || lost_) return;
    guarded(name, [&] {
        const std::vector<float> x_host = bench::random_floats(size_t(n_rows) * size_t(n), rng_);
        const std::vector<float> w_host = bench::random_floats(size_t(n), rng_);
        DeviceBuffer x(x_host.size() * sizeof(float)), w(w_host.size() * sizeof(float)), out(x.bytes());
        bench::upload(x, 0, x_host.data(), x.bytes());
        bench::upload(w, 0, w_host.data(), w.bytes());
        bench::poison(out.get(), out.bytes(), stream_);
        const Timing t = time("rms_norm", [&](int64_t) {
            return rms_norm(x.get<float>(), w.get<float>(), n, n_rows, 1e-5f, out.get<float>(), stream_);
        });
        json row = bandwidth_row(name, "ops", t, double(2 * x.bytes() + w.bytes()),
                                 "x read, weights read, output written; L2-resident at this size, so launch-bound");
        row["kernel"] = "rms_norm";
        row["rows"] = n_rows;
        row["cols"] = n;
        row["output_finite"] = bench::all_finite(out.get<float>(), x_host.size());
        add(std::move(row));
    });
}

// K3's attention residuals for one token: x and 8 banked checkpoints of E 7168 scored and mixed.
void Suite::attn_res_mix_rows() {
    const int n_bank = 8;
    const int64_t E = 7168;
    const std::string name = "attn_res_mix tokens=1 E=7168 banks=8";
    if (!wanted(name) || lost_) return;
    guarded(name, [&] {
        const std::vector<float> x_host = bench::random_floats(size_t(E), rng_);
        const std::vector<float> bank_host = bench::random_floats(size_t(n_bank) * size_t(E), rng_);
        const std::vector<float> w_host = bench::random_floats(size_t(E), rng_);
        DeviceBuffer x(x_host.size() * sizeof(float)), bank(bank_host.size() * sizeof(float)),
            w(w_host.size() * sizeof(float)), out(x.bytes());
        bench::upload(x, 0, x_host.data(), x.bytes());
        bench::upload(bank, 0, bank_host.data(), bank.bytes());
        bench::upload(w, 0, w_host.data(), w.bytes());
        bench::poison(out.get(), out.bytes(), stream_);
        const Timing t = time("attn_res_mix", [&](int64_t) {
            return attn_res_mix(x.get<float>(), bank.get<float>(), n_bank, int64_t(n_bank) * E, w.get<float>(), 1, E,
                                1e-6f, out.get<float>(), stream_);
        });
        json row = bandwidth_row(name, "ops", t, double(x.bytes() + bank.bytes() + w.bytes() + out.bytes()),
                                 "x, the banks and the weights read once (the mix's second read is a cache hit), the "
                                 "output written; L2-resident and one block per token, so launch-bound");
        row["kernel"] = "attn_res_mix";
        row["tokens"] = 1;
        row["E"] = E;
        row["banks"] = n_bank;
        row["output_finite"] = bench::all_finite(out.get<float>(), size_t(E));
        add(std::move(row));
    });
}

json Suite::run() {
    json device = kernel_bench_device_json(device_);
    ceilings();
    if (!o_.ceilings_only) {
        const std::vector<int> all_tokens = o_.quick ? std::vector<int>{1, 8} : std::vector<int>{1, 2, 4, 8};
        for (Shape s : kShapes) gemv_rows(quant::kTypeIQ1_S, s, all_tokens, true);
        const std::vector<int> ends{1, 8};
        gemv_rows(quant::kTypeQ8_0, kOneShape, ends, false);
        gemv_rows(quant::kTypeF16, kOneShape, ends, false);
        // The other types of a Kimi release (fused kernels) on the shapes issue 15 names, and one
        // dequantize-then-dot type (Q4_0) beside them; each row's GB/s sits beside the streaming read.
        for (const uint32_t type : kKimiTypes) {
            gemv_rows(type, kSquareShape, ends, true);
            gemv_rows(type, kKimiShape, ends, true);
            if (!o_.quick) gemv_rows(type, kOneShape, ends, true);
        }
        gemv_rows(quant::kTypeQ4_0, kSquareShape, ends, false);
        const std::vector<int> batch{512};
        if (o_.quick) {
            prefill_rows(quant::kTypeIQ1_S, kOneShape, batch);
            prefill_rows(quant::kTypeQ4_K, kSquareShape, batch);
        } else {
            for (Shape s : kShapes) {
                if (s.rows == kOneShape.rows && s.cols == kOneShape.cols) {
                    const std::vector<int> three{16, 512, 4096};
                    prefill_rows(quant::kTypeIQ1_S, s, three);
                } else {
                    prefill_rows(quant::kTypeIQ1_S, s, batch);
                }
            }
            for (const uint32_t type : kKimiTypes) prefill_rows(type, kSquareShape, batch);
        }
        attention_rows();
        mla_rows();
        kda_rows();
        moe_rows();
        rms_norm_rows();
        attn_res_mix_rows();
    }
    json method = {
        {"timing", "CUDA events around back-to-back launches on one stream; " +
                       std::to_string(o_.samples) + " samples of about " + fixed(o_.sample_seconds * 1e3, 1) +
                       " ms each after warm-up launches; time_s is the median seconds per launch, samples_s every sample"},
        {"inputs", "pseudo-random data (never zeros) generated on the host and uploaded once per shape; seed " +
                       std::to_string(seed_)},
        {"cache", "weights, KV and latent caches, KDA states and MoE expert stacks rotated over copies at distinct "
                  "addresses (MoE: also over disjoint sets of chosen experts) so one full cycle reads at least " +
                      std::to_string(rotate_bytes_) + " bytes (4x the L2 of " + std::to_string(l2_bytes_) +
                      " bytes, at least 64 MiB)"},
        {"outputs", "poisoned with NaN before timing, checked finite after (output_finite)"},
        {"figures", "GB/s = bytes_per_launch / time_s / 1e9; TFLOP/s = flops_per_launch / time_s / 1e12; "
                    "percent_of_ceiling = 100 * figure / ceiling, the ceiling measured in this run"}};
    json options = {{"samples", o_.samples},
                    {"sample_seconds", o_.sample_seconds},
                    {"quick", o_.quick},
                    {"ceilings_only", o_.ceilings_only},
                    {"filter", o_.filter}};
    return {{"device", device}, {"method", method}, {"options", options},
            {"ceilings", ceilings_}, {"rows", rows_}, {"errors", errors_}};
}

}  // namespace kernel_suite

std::string cuda_unavailable_reason() {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    }
    if (n == 0) return "the CUDA runtime reports no devices";
    return "";
}

std::string run_kernel_bench(const KernelBenchOptions& options) {
    if (const std::string why = cuda_unavailable_reason(); !why.empty())
        fail(Status::unsupported, "no CUDA device: " + why);
    if (options.samples < 1 || !(options.sample_seconds > 0)) fail(Status::invalid_argument, "kernel bench: samples >= 1 and sample_seconds > 0");
    kernel_suite::Suite suite(options);
    return suite.run().dump(2, ' ', false, kernel_suite::json::error_handler_t::replace);
}

}  // namespace strata::cuda
