// Memory ceilings for the kernel benchmarks (kernel_bench.hpp): the rate at which a plain kernel
// streams a large device buffer once, and a fill with pseudo-random words for the buffers such a
// ceiling reads (never zeros: a ceiling must read the same kind of data the kernels read).
//
// stream_read is the "streaming-read" bound a bandwidth-bound kernel (decode GEMV, decode
// attention) is judged against: every thread issues 16-byte loads, several in flight, over a
// grid-stride loop, and folds what it read into one word so the loads cannot be elided.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_bandwidth.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace strata::cuda {

// Reads bytes of data (device, 16-byte aligned, bytes a multiple of 16) once and XORs every
// 32-bit word read into *result (device; the caller may ignore the value, which exists so the
// reads are observable). cudaErrorInvalidValue for a misaligned pointer or size.
cudaError_t stream_read(const void* data, size_t bytes, unsigned int* result, cudaStream_t stream);

// The XOR of every 32-bit word of bytes (host), the value stream_read folds in (for its test).
unsigned int stream_read_reference(const void* data, size_t bytes);

// Fills bytes of data (device, 4-byte aligned, bytes a multiple of 4) with pseudo-random 32-bit
// words, a hash of (seed, word index), none of them zero.
cudaError_t fill_random_words(void* data, size_t bytes, uint64_t seed, cudaStream_t stream);

// The word fill_random_words stores at word index i (host, for its test).
uint32_t random_word(uint64_t seed, uint64_t i);

}  // namespace strata::cuda
