// Dequantization on the GPU for every weight type of gpu_types.hpp: weight rows to f16 for the
// cuBLAS prefill path (dequantize_rows_f16, gemm.cuh) and embedding rows to f32 (get_rows, ops.cuh).
// One templated kernel each over the per-type decoders of qtype_decode.cuh (bit for bit
// lib/quant's decode; the f16 values are those floats rounded to nearest even), one thread per group
// of eight weights; the float types are converted element by element.
//
// UNTESTED ON A GPU until a device check has run it (cuda/tests/test_gemm.cpp, test_ops.cu).
#include <algorithm>
#include <cstdint>

#include <cuda_fp16.h>

#include "gemm.cuh"
#include "runtime/gpu_types.hpp"
#include "kernels/ops/ops.cuh"
#include "qtables_device.cuh"
#include "qtype_decode.cuh"
#include "quant/half.hpp"
#include "quant/type_traits.hpp"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    return uint32_t(__half_as_ushort(__float2half_rn(lo))) | uint32_t(__half_as_ushort(__float2half_rn(hi))) << 16;
}

// Eight floats rounded to f16 (round to nearest even, as quant::f32_to_f16), as one 16-byte store.
__device__ __forceinline__ uint4 pack8_f16(const float v[8]) {
    return make_uint4(pack_half2(v[0], v[1]), pack_half2(v[2], v[3]), pack_half2(v[4], v[5]), pack_half2(v[6], v[7]));
}

// One unit of a row: an element (float types) or a group of eight weights (quantized types).
template <uint32_t kType>
__device__ __forceinline__ void dequantize_unit(const uint8_t* row, int64_t u, const QTables& tab, __half* dst) {
    if constexpr (kType == quant::kTypeF32) {
        dst[u] = __float2half_rn(reinterpret_cast<const float*>(row)[u]);
    } else if constexpr (kType == quant::kTypeF16) {
        dst[u] = __ushort_as_half(reinterpret_cast<const uint16_t*>(row)[u]);  // the same bits
    } else if constexpr (kType == quant::kTypeBF16) {
        dst[u] = __float2half_rn(quant::bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[u]));
    } else {
        float v[8];
        decode_row_group<kType>(row, u, tab, v);
        *reinterpret_cast<uint4*>(dst + 8 * u) = pack8_f16(v);
    }
}

template <uint32_t kType>
__device__ __forceinline__ void decode_unit_f32(const uint8_t* row, int64_t u, const QTables& tab, float* dst) {
    if constexpr (kType == quant::kTypeF32) {
        dst[u] = reinterpret_cast<const float*>(row)[u];
    } else if constexpr (kType == quant::kTypeF16) {
        dst[u] = quant::f16_to_f32(reinterpret_cast<const uint16_t*>(row)[u]);
    } else if constexpr (kType == quant::kTypeBF16) {
        dst[u] = quant::bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[u]);
    } else {
        float v[8];
        decode_row_group<kType>(row, u, tab, v);
        for (int j = 0; j < 8; ++j) dst[8 * u + j] = v[j];
    }
}

constexpr bool is_float_type(uint32_t t) {
    return t == quant::kTypeF32 || t == quant::kTypeF16 || t == quant::kTypeBF16;
}

// grid.y walks the rows, grid.x the units of a row, both with strides so any size fits the grid
// limits. 64-bit offsets throughout.
template <uint32_t kType>
__global__ void dequantize_rows_kernel(const uint8_t* data, uint64_t row_bytes, int64_t n_rows, int64_t cols,
                                       int64_t units_per_row, __half* out) {
    const QTables tab = device_qtables();
    for (int64_t r = blockIdx.y; r < n_rows; r += gridDim.y) {
        const uint8_t* row = data + uint64_t(r) * row_bytes;
        __half* dst = out + r * cols;
        for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < units_per_row;
             u += int64_t(gridDim.x) * blockDim.x)
            dequantize_unit<kType>(row, u, tab, dst);
    }
}

template <uint32_t kType>
cudaError_t launch_dequantize(const uint8_t* data, uint64_t row_bytes, int64_t n_rows, int64_t cols, __half* out,
                              cudaStream_t stream) {
    const int64_t units = is_float_type(kType) ? cols : cols / 8;
    const dim3 grid(unsigned(std::min<int64_t>((units + kThreads - 1) / kThreads, 1 << 16)),
                    unsigned(std::min<int64_t>(n_rows, 65535)));
    dequantize_rows_kernel<kType><<<grid, kThreads, 0, stream>>>(data, row_bytes, n_rows, cols, units, out);
    return cudaGetLastError();
}

// One block per requested row; each value exactly as quant::dequantize_row computes it. An id
// outside the table gives a row of NaN instead of a read past the table (ids are checked on the
// host before they get here; this only keeps a bad one from faulting the device).
template <uint32_t kType>
__global__ void get_rows_kernel(DeviceMatrix table, const int32_t* ids, float* out) {
    const int64_t cols = table.cols;
    float* o = out + int64_t(blockIdx.x) * cols;
    const int32_t id = ids[blockIdx.x];
    if (id < 0 || int64_t(id) >= table.rows) {
        for (int64_t c = threadIdx.x; c < cols; c += kThreads) o[c] = __int_as_float(0x7fc00000);
        return;
    }
    const QTables tab = device_qtables();
    const uint8_t* row = table.data + uint64_t(id) * table.row_bytes;  // (DeviceMatrix::row is host-only)
    const int64_t units = is_float_type(kType) ? cols : cols / 8;
    for (int64_t u = threadIdx.x; u < units; u += kThreads) decode_unit_f32<kType>(row, u, tab, o);
}

// The alignment a type's rows need on the device (2-byte fields, float32, or the block struct's).
unsigned type_align(uint32_t type) {
    if (type == quant::kTypeF32) return 4;
    if (type == quant::kTypeF16 || type == quant::kTypeBF16) return 2;
    return unsigned(qtype_block_align(type));
}

// Bytes one row of cols values takes, 0 for a type these kernels do not read or a ragged row.
uint64_t min_row_bytes(uint32_t type, int64_t cols) {
    const quant::TypeTraits* t = gpu_type(type) ? quant::find_type_traits(type) : nullptr;
    if (!t || cols <= 0 || cols % t->block_elements != 0 || type_align(type) == 0) return 0;
    return uint64_t(cols / t->block_elements) * uint64_t(t->block_bytes);
}

// Calls f.template operator()<kType>() for the type id (false: not a type these kernels take).
template <class F>
cudaError_t dispatch(uint32_t type, F&& f) {
    switch (type) {
    case quant::kTypeF32: return f.template operator()<quant::kTypeF32>();
    case quant::kTypeF16: return f.template operator()<quant::kTypeF16>();
    case quant::kTypeBF16: return f.template operator()<quant::kTypeBF16>();
#define STRATA_DEQUANT_CASE(t) \
    case t: return f.template operator()<t>();
        STRATA_CUDA_QTYPES(STRATA_DEQUANT_CASE)
#undef STRATA_DEQUANT_CASE
    default: return cudaErrorInvalidValue;
    }
}

struct DequantizeRows {
    const uint8_t* data;
    uint64_t row_bytes;
    int64_t n_rows, cols;
    __half* out;
    cudaStream_t stream;
    template <uint32_t kType>
    cudaError_t operator()() const {
        return launch_dequantize<kType>(data, row_bytes, n_rows, cols, out, stream);
    }
};

struct GetRows {
    const DeviceMatrix& table;
    const int32_t* ids;
    int n;
    float* out;
    cudaStream_t stream;
    template <uint32_t kType>
    cudaError_t operator()() const {
        get_rows_kernel<kType><<<unsigned(n), kThreads, 0, stream>>>(table, ids, out);
        return cudaGetLastError();
    }
};

}  // namespace

cudaError_t dequantize_rows_f16(const DeviceMatrix& w, int64_t row0, int64_t n_rows, __half* out,
                                cudaStream_t stream) {
    if (row0 < 0 || n_rows < 0 || row0 > w.rows || n_rows > w.rows - row0 || w.cols < 1) return cudaErrorInvalidValue;
    if (n_rows == 0) return cudaSuccess;
    const uint64_t need = min_row_bytes(w.type, w.cols);
    // 16-byte stores of eight halves need an aligned out (every row then is: cols % 8 == 0).
    if (need == 0 || w.row_bytes < need || !w.data || !out || (reinterpret_cast<uintptr_t>(out) & 15u) ||
        (reinterpret_cast<uintptr_t>(w.data) | uintptr_t(w.row_bytes)) % type_align(w.type) != 0)
        return cudaErrorInvalidValue;
    return dispatch(w.type, DequantizeRows{w.row(row0), w.row_bytes, n_rows, w.cols, out, stream});
}

cudaError_t get_rows(const DeviceMatrix& table, const int32_t* ids, int n, float* out, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    const uint64_t need = min_row_bytes(table.type, table.cols);
    if (!table.data || !ids || !out || n < 0 || table.cols <= 0 || table.rows <= 0 || need == 0 || table.row_bytes < need)
        return cudaErrorInvalidValue;
    // Rows hold 2-byte fields (f16 scales, halves), floats or blocks of their struct's alignment:
    // refuse addresses that would make those loads misaligned instead of faulting on the device.
    if ((reinterpret_cast<uintptr_t>(table.data) | uintptr_t(table.row_bytes)) % type_align(table.type) != 0)
        return cudaErrorInvalidValue;
    return dispatch(table.type, GetRows{table, ids, n, out, stream});
}

}  // namespace strata::cuda
