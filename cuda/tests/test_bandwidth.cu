// The streaming-read ceiling and the random fill (bandwidth.cuh) against host references: the
// fill's words equal random_word's and none is zero; stream_read folds exactly the words of the
// buffer (XOR, so launch order does not matter) on ragged sizes, from an offset pointer, and
// refuses misaligned pointers and sizes. Exact comparisons: both are integer operations.
// UNTESTED ON A GPU until a device check has run it.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bandwidth.cuh"
#include "cuda_test_util.cuh"

namespace {

// A failure prints the two values compared.
void expect(bool ok, const char* what, unsigned long long a, unsigned long long b) {
    strata::cuda_test::expect(ok, std::string(what) + ": " + std::to_string(a) + " vs " + std::to_string(b));
}

}  // namespace

int main() {
    using namespace strata::cuda;
    if (int rc = strata::cuda_test::start("bandwidth"); rc) return rc;
    const bool small = strata::cuda_test::small_sizes();
    const uint64_t seed = strata::cuda_test::rng();
    const size_t max_bytes = small ? (size_t(1) << 16) + 48 : (size_t(64) << 20) + 48;

    void* buf = nullptr;
    unsigned int* result = nullptr;
    cudaMalloc(&buf, max_bytes + 16);
    cudaMalloc(&result, sizeof(unsigned int));

    // The fill, word for word.
    expect(fill_random_words(buf, max_bytes, seed, nullptr) == cudaSuccess, "fill_random_words", 0, 0);
    const std::vector<uint32_t> words = strata::cuda_test::download(static_cast<uint32_t*>(buf), max_bytes / 4);
    size_t mismatched = 0, zeros = 0;
    for (size_t i = 0; i < words.size(); ++i) {
        mismatched += words[i] != random_word(seed, i);
        zeros += words[i] == 0;
    }
    expect(mismatched == 0, "fill words equal random_word", mismatched, 0);
    expect(zeros == 0, "no zero word", zeros, 0);

    // stream_read over ragged sizes and an offset start.
    const size_t sizes[] = {16, 48, 4096 + 16, 1 << 20, max_bytes - 16};
    for (size_t offset : {size_t(0), size_t(16)}) {
        for (size_t bytes : sizes) {
            if (offset + bytes > max_bytes) continue;
            const auto* start = static_cast<const uint8_t*>(buf) + offset;
            cudaMemset(result, 0, sizeof(unsigned int));
            expect(stream_read(start, bytes, result, nullptr) == cudaSuccess, "stream_read launch", bytes, 0);
            const unsigned int got = strata::cuda_test::download(result, 1)[0];
            const unsigned int want = stream_read_reference(words.data() + offset / 4, bytes);
            expect(got == want, "stream_read fold", got, want);
        }
    }

    // Refusals: misaligned pointer, size not a multiple of 16, null result.
    expect(stream_read(static_cast<uint8_t*>(buf) + 4, 64, result, nullptr) == cudaErrorInvalidValue,
           "misaligned pointer refused", 0, 0);
    expect(stream_read(buf, 40, result, nullptr) == cudaErrorInvalidValue, "ragged size refused", 0, 0);
    expect(stream_read(buf, 64, nullptr, nullptr) == cudaErrorInvalidValue, "null result refused", 0, 0);
    expect(cudaDeviceSynchronize() == cudaSuccess, "no asynchronous error", 0, 0);

    cudaFree(buf);
    cudaFree(result);
    return strata::cuda_test::finish("bandwidth");
}
