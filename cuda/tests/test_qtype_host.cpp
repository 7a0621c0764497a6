// The quantized kernels' per-type arithmetic, run on the CPU (no GPU needed; runs everywhere):
// the __host__ __device__ code of qtype_decode.cuh and qtype_dot.cuh that the CUDA kernels run,
// compiled here as host code, against lib/quant on fresh random blocks of every type.
//  1. The type table (gpu_types.hpp): the GPU takes exactly the types the CPU backend multiplies
//     (every ggml id 0..63), each with the activation format lib/quant pairs it with where gemv
//     quantizes activations, and a decoder for every quantized one.
//  2. decode8 of every quantized type equals quant::dequantize_row bit for bit (every group of
//     every block; -0.0 included), on blocks of random bytes (finite scales).
//  3. The fused GEMV parts (Q4_K, Q5_K, Q6_K, IQ4_XS, IQ4_NL, IQ2_XXS, IQ3_XXS, IQ1_M): the
//     integers summed over a block's parts equal lib/quant's block sums exactly, and the float dot of
//     a row equals the CPU's vec_dot within float rounding (1e-5 of the sum of |terms|), for rows of
//     1, 3 and 17 blocks against activations quantized by lib/quant (Q8_K, Q8_0).
//  4. qdev's byte helpers (dp4a, vsub4, byte_perm, lookup16, apply_signs4) against per-byte
//     references on random words.
// A .cpp (C++20, host compiler): it includes the CPU backend's headers.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.cuh"
#include "exec/cpu_backend.hpp"
#include "kernels/products/gemm.cuh"
#include "kernels/products/gemv.cuh"
#include "runtime/gpu_types.hpp"
#include "kernels/products/qtype_decode.cuh"
#include "kernels/products/qtype_dot.cuh"
#include "bench/random_blocks.hpp"
#include "quant/formats.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant/type_traits.hpp"

using namespace strata;
using cuda_test::expect;
using cuda_test::report;
using cuda_test::rng;

namespace {

std::string name_of(uint32_t type) {
    const quant::TypeTraits* t = quant::find_type_traits(type);
    return t ? t->name : "type " + std::to_string(type);
}

// ---- 1. the table -----------------------------------------------------------------------------

void test_table() {
    int mismatches = 0;
    for (uint32_t id = 0; id < 64; ++id) {
        const bool cpu = exec::CpuBackend::supports(id), gpu = cuda::gemv_supports(id);
        if (cpu != gpu) {
            ++mismatches;
            std::printf("FAIL type %u (%s): CPU backend %s it, CUDA %s\n", id, name_of(id).c_str(),
                        cpu ? "runs" : "refuses", gpu ? "takes" : "refuses");
        }
    }
    cuda_test::failures += mismatches;
    report(mismatches == 0, "the CUDA products take exactly the types the CPU backend runs (ids 0..63)");

    bool ok = true;
    for (const cuda::GpuTypeInfo& g : cuda::kGpuTypes) {
        const quant::TypeTraits* t = quant::find_type_traits(g.type);
        const bool quantized = t && t->block_elements > 1;
        if (!t) {
            expect(false, "type " + std::to_string(g.type) + " of the table is unknown to lib/quant");
            ok = false;
            continue;
        }
        if (g.act != quant::kTypeF32 && g.act != t->dot_type) {
            expect(false, name_of(g.type) + ": gemv quantizes activations to " + name_of(g.act) + ", lib/quant pairs " +
                              name_of(t->dot_type));
            ok = false;
        }
        if (quantized && cuda::qtype_block_align(g.type) == 0) {
            expect(false, name_of(g.type) + " has no device decoder");
            ok = false;
        }
        if (quantized != (cuda::gemm_mma_supports(g.type, 256) && cuda::gemm_mma_supports(g.type, 4096))) {
            expect(false, name_of(g.type) + ": the tensor-core path " + (quantized ? "refuses" : "takes") + " it");
            ok = false;
        }
        const size_t act = cuda::gemv_act_bytes(g.type, 512, 3);
        const size_t want = g.act == quant::kTypeQ8_K   ? 3 * 2 * sizeof(quant::block_q8_K)
                            : g.act == quant::kTypeQ8_0 ? 3 * 16 * sizeof(quant::block_q8_0)
                                                        : 0;
        if (act != want) {
            expect(false, name_of(g.type) + ": gemv_act_bytes " + std::to_string(act) + ", want " + std::to_string(want));
            ok = false;
        }
    }
    ok = ok && !cuda::gemm_mma_supports(quant::kTypeQ4_K, 96) && !cuda::gemv_supports(quant::kTypeQ8_K) &&
         !cuda::gemv_supports(quant::kTypeQ8_1) && !cuda::gemv_supports(99);
    report(ok, "type table: activation formats as lib/quant pairs them, a decoder per quantized type, " +
                   std::to_string(sizeof(cuda::kGpuTypes) / sizeof(cuda::kGpuTypes[0])) + " types");
}

// ---- 2. decode8 -------------------------------------------------------------------------------

template <uint32_t kType>
void test_decode() {
    using Q = cuda::QType<kType>;
    const size_t n_blocks = 37;
    const std::vector<uint8_t> bytes = cuda::random_blocks(kType, n_blocks, rng);
    const int64_t n = int64_t(n_blocks) * Q::kElems;
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n), std::nanf(""));
    quant::dequantize_row(kType, bytes.data(), want.data(), n);
    const cuda::QTables tab = cuda::host_qtables();
    for (int64_t u = 0; u < n / 8; ++u) cuda::decode_row_group<kType>(bytes.data(), u, tab, got.data() + 8 * u);
    size_t differing = 0, first = 0;
    for (size_t i = 0; i < got.size(); ++i)
        if (quant::f32_to_bits(got[i]) != quant::f32_to_bits(want[i]) && differing++ == 0) first = i;
    char detail[160] = "";
    if (differing)
        std::snprintf(detail, sizeof detail, " (first: weight %zu, got %.9g, want %.9g)", first, got[first], want[first]);
    report(differing == 0, "decode8 " + name_of(kType) + " == quant::dequantize_row bit for bit, " +
                               std::to_string(n) + " weights, " + std::to_string(differing) + " differing" + detail);
}

// ---- 3. fused dot parts -------------------------------------------------------------------------

// The exact integers lib/quant forms for one weight block against one activation block
// (i0, i1 as QDot<type>::sums defines them).
template <uint32_t kType>
cuda::PartSums reference_sums(const uint8_t* wb, const uint8_t* ab) {
    using namespace quant;
    if constexpr (cuda::QDot<kType>::kAct == kTypeQ8_K) {
        const auto& a = *reinterpret_cast<const block_q8_K*>(ab);
        if constexpr (kType == kTypeQ4_K) {
            const KBlockSums s = q4_K_block_sums(*reinterpret_cast<const block_q4_K*>(wb), a.qs, a.bsums);
            return {s.sumi, s.summs};
        } else if constexpr (kType == kTypeQ5_K) {
            const KBlockSums s = q5_K_block_sums(*reinterpret_cast<const block_q5_K*>(wb), a.qs, a.bsums);
            return {s.sumi, s.summs};
        } else if constexpr (kType == kTypeQ6_K) {
            return {q6_K_block_sums(*reinterpret_cast<const block_q6_K*>(wb), a.qs, a.bsums).sumi, 0};
        } else if constexpr (kType == kTypeIQ4_XS) {
            const auto& b = *reinterpret_cast<const block_iq4_xs*>(wb);
            int32_t sum = 0;
            for (int s = 0; s < 8; ++s) sum += iq4xs_sub_scale(b, s) * iq4xs_sub_sum(b, kIq4nlValues, s, a.qs + 32 * s);
            return {sum, 0};
        } else if constexpr (kType == kTypeIQ2_XXS) {
            return {iq2xxs_block_sum(*reinterpret_cast<const block_iq2_xxs*>(wb), kIq2xxsGrid, kIq2Signs, a.qs), 0};
        } else if constexpr (kType == kTypeIQ3_XXS) {
            return {iq3xxs_block_sum(*reinterpret_cast<const block_iq3_xxs*>(wb), kIq3xxsGrid, kIq2Signs, a.qs), 0};
        } else {
            static_assert(kType == kTypeIQ1_M);
            const Iq1mBlockSums s = iq1m_block_sums(*reinterpret_cast<const block_iq1_m*>(wb), kIq1sGrid, a.qs);
            return {s.sumi1, s.sumi2};
        }
    } else {
        static_assert(kType == kTypeIQ4_NL);
        const auto& b = *reinterpret_cast<const block_iq4_nl*>(wb);
        const auto& a = *reinterpret_cast<const block_q8_0*>(ab);
        int32_t sum = 0;
        for (int j = 0; j < kQK4_NL; ++j) sum += int32_t(kIq4nlValues[iq4_code(b.qs, j)]) * a.qs[j];
        return {sum, 0};
    }
}

template <uint32_t kType>
void test_fused(int nb) {
    using D = cuda::QDot<kType>;
    const quant::TypeTraits& wt = *quant::find_type_traits(kType);
    const quant::TypeTraits& at = *quant::find_type_traits(D::kAct);
    const int64_t cols = int64_t(nb) * D::kElems;
    const int rows = 6;
    const std::vector<uint8_t> w = cuda::random_blocks(kType, size_t(rows * nb), rng);
    std::vector<float> x = cuda_test::normal(size_t(cols));
    for (int64_t i = 0; i < cols; i += 97) x[size_t(i)] *= 6.0f;  // a few outliers
    if (nb > 1) std::fill(x.begin(), x.begin() + D::kElems, 0.0f);  // an all-zero block (d = 0)
    const size_t act_row = quant::row_size(D::kAct, cols);
    std::vector<uint8_t> act(act_row);
    at.quantize(x.data(), act.data(), cols, nullptr);
    const int act_per_block = int(act_row / size_t(nb));  // bytes of activations per weight block
    const cuda::DotTables tab = cuda::host_dot_tables();

    int bad_blocks = 0;
    double worst = 0.0;
    for (int r = 0; r < rows; ++r) {
        const uint8_t* row = w.data() + size_t(r) * (size_t(nb) * wt.block_bytes);
        const float cpu = wt.dot_scalar(cols, row, act.data());
        double gpu = 0.0, abs_sum = 0.0;
        float gpu_f = 0.0f;
        for (int b = 0; b < nb; ++b) {
            const uint8_t* wb = row + size_t(b) * wt.block_bytes;
            const uint8_t* ab = act.data() + size_t(b) * size_t(act_per_block);
            cuda::PartSums total;
            for (int p = 0; p < D::kParts; ++p) {
                const typename D::W wp = D::load_w(wb, p, tab);
                const typename D::A ap = D::load_a(ab, p);
                const cuda::PartSums s = D::sums(wp, ap);
                total.i0 += s.i0;
                total.i1 += s.i1;
                const float f = D::dot(wp, ap);
                gpu_f += f;
                gpu += double(f);
                abs_sum += std::fabs(double(f));
            }
            const cuda::PartSums want = reference_sums<kType>(wb, ab);
            if (total.i0 != want.i0 || total.i1 != want.i1) {
                if (bad_blocks++ == 0)
                    std::printf("  %s row %d block %d: parts sum to (%d, %d), lib/quant (%d, %d)\n", name_of(kType).c_str(), r,
                                b, total.i0, total.i1, want.i0, want.i1);
            }
        }
        const double err = std::fabs(double(gpu_f) - double(cpu)) / std::max(abs_sum, 1e-30);
        worst = std::max(worst, err);
        (void)gpu;
    }
    char line[200];
    std::snprintf(line, sizeof line, "fused %-7s x %s, %2d blocks: block integers %s, dot vs vec_dot", name_of(kType).c_str(),
                  name_of(D::kAct).c_str(), nb, bad_blocks ? "DIFFER" : "equal");
    report(bad_blocks == 0 && worst <= 1e-5, line, worst, 1e-5);
}

// ---- 4. byte helpers --------------------------------------------------------------------------

void test_byte_helpers() {
    bool ok = true;
    uint32_t table[4];
    for (auto& t : table) t = uint32_t(rng());
    for (int i = 0; i < 20000 && ok; ++i) {
        const uint32_t a = uint32_t(rng()), b = uint32_t(rng()), s = uint32_t(rng());
        int dot = 7;
        uint32_t sub = 0, perm = 0, look = 0, signed_v = 0;
        const uint64_t pair = uint64_t(b) << 32 | a;
        const uint8_t* tb = reinterpret_cast<const uint8_t*>(table);
        for (int k = 0; k < 4; ++k) {
            const int8_t ak = int8_t(a >> (8 * k)), bk = int8_t(b >> (8 * k));
            dot += ak * bk;
            sub |= uint32_t(uint8_t(uint8_t(a >> (8 * k)) - uint8_t(b >> (8 * k)))) << (8 * k);
            perm |= uint32_t(uint8_t(pair >> (8 * ((s >> (4 * k)) & 7u)))) << (8 * k);
            look |= uint32_t(tb[(a >> (8 * k)) & 0xfu]) << (8 * k);
            const int8_t v = int8_t(int8_t(b >> (8 * k)) / 2);  // magnitudes below 128: negation exact
            signed_v |= uint32_t(uint8_t((s >> k) & 1u ? int8_t(-v) : v)) << (8 * k);
        }
        uint32_t halves = 0;
        for (int k = 0; k < 4; ++k) halves |= uint32_t(uint8_t(int8_t(int8_t(b >> (8 * k)) / 2))) << (8 * k);
        ok = cuda::qdev::dp4a(int(a), int(b), 7) == dot && cuda::qdev::vsub4(a, b) == sub &&
             cuda::qdev::byte_perm(a, b, s) == perm && cuda::qdev::lookup16(table, a) == look &&
             cuda::qdev::apply_signs4(halves, s) == signed_v;
    }
    report(ok, "qdev::dp4a, vsub4, byte_perm, lookup16, apply_signs4 == per-byte references (20000 words)");
}

}  // namespace

int main() {
    const uint64_t seed = std::random_device{}();
    rng.seed(seed);
    std::printf("qtype_host (no GPU needed): seed %llu\n", (unsigned long long)seed);

    test_table();
    test_byte_helpers();
#define STRATA_TEST_DECODE(t) test_decode<t>();
    STRATA_CUDA_QTYPES(STRATA_TEST_DECODE)
#undef STRATA_TEST_DECODE
    for (const int nb : {1, 3, 17}) {
#define STRATA_TEST_FUSED(t) test_fused<t>(nb);
        STRATA_CUDA_FUSED_QTYPES(STRATA_TEST_FUSED)
#undef STRATA_TEST_FUSED
    }
    return cuda_test::finish("qtype_host");
}
