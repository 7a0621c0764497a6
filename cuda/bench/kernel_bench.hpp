// The kernel benchmark suite behind `strata-bench kernels` (strata_cuda_kernel_bench_json): every
// CUDA kernel of the decode and prefill paths timed on the shapes of real models, each figure
// beside a ceiling measured in the same run on the same device:
//   - streaming read (bandwidth.cuh) and a device-to-device cudaMemcpy, for bandwidth-bound rows
//     (decode GEMV: GB/s of weight bytes; decode attention: GB/s of KV bytes; MLA decode: GB/s of
//     the latent cache's unique bytes; KDA decode: the state read and written; MoE: the chosen
//     experts' blocks; rms_norm, attn_res_mix);
//   - cuBLAS f16 GEMM on the same shape, for the prefill products (TFLOP/s); its best rate of the
//     run for prefill attention, MLA prefill and the KDA chunked form.
// Method: inputs are fresh pseudo-random data (never zeros) uploaded once; weights are rotated
// over enough copies that the bytes a row cycles through exceed 4x the L2 cache, so no timed
// launch finds its weights cache resident; warm-up launches first; each sample times a run of
// back-to-back launches with CUDA events and divides; the median of the samples is reported, and
// every sample is kept. Outputs are poisoned with NaN before timing and checked finite after.
// Host code (C++20, g++). UNTESTED ON A GPU until a device check has run it.
#pragma once

#include <functional>
#include <string>

namespace strata::cuda {

struct KernelBenchOptions {
    int samples = 7;               // timed samples per row; the median is reported
    double sample_seconds = 0.02;  // each sample runs launches for about this long
    bool quick = false;            // the short set (device checks): fewer shapes and token counts
    bool ceilings_only = false;    // only the ceilings (streaming read, device copy)
    std::string filter;            // non-empty: only kernel rows whose name contains it
    std::function<void(const std::string&)> log;  // one line per measured row (may be empty)
};

// Runs the suite on the current device and returns its JSON text: "device" (name, compute
// capability, SMs, L2, memory, clocks, CUDA runtime/driver and cuBLAS versions), "method",
// "options", "ceilings", "rows" (raw times, samples, bytes or flops, the derived rate, its
// ceiling and the ratio) and "errors" (rows that failed, with the CUDA error). Throws
// Error(unsupported) naming the reason when there is no usable CUDA device.
std::string run_kernel_bench(const KernelBenchOptions& options);

// Why no CUDA device can be used ("" when one can): the runtime's error for the device count.
std::string cuda_unavailable_reason();

}  // namespace strata::cuda
