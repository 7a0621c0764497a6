// GPU IQ1_S dequantization against the CPU decode of the same shared header, on fresh random
// blocks (every byte random, so every grid index, scale code and sign occurs), bit for bit.
// Exit 77 (ctest: skipped) with a printed reason when no GPU is present.
#include <cstdio>
#include <cmath>
#include <cstring>
#include <vector>

#include "cuda_test_util.cuh"
#include "kernels/products/iq1s_dequant.cuh"
#include "quant/iq/iq1s_block.hpp"

using namespace strata;
using cuda_test::rng;

int main() {
    if (const int skip = cuda_test::start("cuda iq1s dequant")) return skip;
    for (size_t n_blocks : {size_t(1), size_t(3), size_t(17), size_t(4096)}) {
        std::vector<quant::block_iq1_s> host(n_blocks);
        std::vector<uint8_t> bytes(n_blocks * sizeof(quant::block_iq1_s));
        for (auto& byte : bytes) byte = uint8_t(rng());
        std::memcpy(host.data(), bytes.data(), bytes.size());
        for (auto& b : host) {  // keep d finite so bit comparison is meaningful
            b.d = quant::f32_to_f16(std::ldexp(float(rng() % 1000 + 1), -int(rng() % 20)));
        }
        std::vector<float> expected(n_blocks * 256), got(n_blocks * 256, -12345.0f);
        for (size_t i = 0; i < n_blocks; ++i) quant::iq1s_decode_block(host[i], quant::kIq1sGrid, &expected[i * 256]);
        void* d_blocks = nullptr;
        float* d_out = nullptr;
        cudaMalloc(&d_blocks, bytes.size());
        cudaMalloc(&d_out, got.size() * sizeof(float));
        cudaMemcpy(d_blocks, host.data(), bytes.size(), cudaMemcpyHostToDevice);
        cudaMemcpy(d_out, got.data(), got.size() * sizeof(float), cudaMemcpyHostToDevice);  // poison
        cudaError_t e = cuda::iq1s_dequantize(d_blocks, n_blocks, d_out, nullptr);
        if (e == cudaSuccess) e = cudaMemcpy(got.data(), d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
        cudaFree(d_blocks);
        cudaFree(d_out);
        size_t mismatches = 0;
        for (size_t i = 0; i < got.size(); ++i)
            mismatches += std::memcmp(&got[i], &expected[i], sizeof(float)) != 0;
        char what[128];
        std::snprintf(what, sizeof what, "iq1s_dequantize n_blocks=%zu mismatches=%zu (%s)", n_blocks, mismatches,
                      cudaGetErrorString(e));
        cuda_test::report(e == cudaSuccess && mismatches == 0, what);
    }
    return cuda_test::finish("cuda iq1s dequant");
}
