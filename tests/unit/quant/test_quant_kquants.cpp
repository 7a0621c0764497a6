// The K-quants (lib/quant/k_quants*): the STRATA_HD block helpers against the row decoders, the
// per-block integer sums and every dot kernel (scalar = ggml's generic C, and AVX2) against
// integers and float64 products derived here from decoded weights, and the Q4_K, Q5_K, Q6_K
// quantizers (error on random rows, edge rows, and llama.cpp's bytes on a fixed row).
// Hand-worked decodes: test_kquant_decode.cpp; bit-exactness of the decoders against the gguf
// package on random blocks: the lead's interop pytest.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/half.hpp"
#include "quant/codecs/k_quants.hpp"
#include "quant/codecs/q8_k.hpp"
#include "quant_test_util.hpp"
#include "test_support.hpp"

using namespace strata;

namespace {

using test::DecodeFn;
using test::DotFn;
using test::put_f16;
using test::random_scale;
using SumsFn = quant::KBlockSums (*)(const void*, const int8_t*, const int16_t*);

// One K-quant type as these checks see it.
struct KSpec {
    const char* name;
    size_t bytes;  // per block of 256
    size_t d_off;  // byte offset of the binary16 d
    int dmin_off;  // of the binary16 dmin; -1: no mins
    DecodeFn decode;
    DotFn scalar;
    DotFn avx2;  // null: no AVX2 kernel
    SumsFn sums;
    // Scale fields rewritten so that every sub-block scale and min has magnitude <= 4.
    void (*small_scales)(uint8_t* block, std::mt19937_64& rng);
};

template <typename Block>
const Block& as(const void* p) {
    return *static_cast<const Block*>(p);
}

// Q3_K's sixteen 6-bit codes packed by this test (not by the library): low nibbles in bytes
// 0..7 (s < 8: low half, s >= 8: high half of byte s - 8), bits 4-5 in bytes 8..11.
void pack_q3_K_scales(const int* codes, uint8_t* scales) {
    std::memset(scales, 0, 12);
    for (int s = 0; s < 16; ++s) {
        scales[s % 8] = uint8_t(scales[s % 8] | (codes[s] & 15) << (s < 8 ? 0 : 4));
        scales[8 + s % 4] = uint8_t(scales[8 + s % 4] | ((codes[s] >> 4) & 3) << (2 * (s / 4)));
    }
}

void small_q2_K(uint8_t* b, std::mt19937_64&) {
    for (int s = 0; s < 16; ++s) b[s] &= 0x33;  // scale and min 0..3
}
void small_q3_K(uint8_t* b, std::mt19937_64& rng) {
    int codes[16];
    for (int& c : codes) c = 28 + int(rng() % 8);  // scale = code - 32 in -4..3
    pack_q3_K_scales(codes, b + offsetof(quant::block_q3_K, scales));
}
void small_q45_K(uint8_t* b, std::mt19937_64&) {
    // Every 6-bit scale and min takes its low bits from these bytes' low two bits and its top
    // bits from bits 6-7, which the mask clears: all of them 0..3.
    for (size_t i = 0; i < 12; ++i) b[offsetof(quant::block_q4_K, scales) + i] &= 0x03;
}
void small_q6_K(uint8_t* b, std::mt19937_64& rng) {
    for (size_t s = 0; s < 16; ++s) b[offsetof(quant::block_q6_K, scales) + s] = uint8_t(int8_t(int(rng() % 9) - 4));
}

const KSpec kSpecs[] = {
    {"q2_K", sizeof(quant::block_q2_K), offsetof(quant::block_q2_K, d), int(offsetof(quant::block_q2_K, dmin)),
     quant::decode_row_q2_K, quant::vec_dot_q2_K_q8_K, quant::vec_dot_q2_K_q8_K_avx2,
     [](const void* b, const int8_t* q8, const int16_t* bs) {
         return quant::q2_K_block_sums(as<quant::block_q2_K>(b), q8, bs);
     },
     small_q2_K},
    {"q3_K", sizeof(quant::block_q3_K), offsetof(quant::block_q3_K, d), -1, quant::decode_row_q3_K,
     quant::vec_dot_q3_K_q8_K, quant::vec_dot_q3_K_q8_K_avx2,
     [](const void* b, const int8_t* q8, const int16_t* bs) {
         return quant::q3_K_block_sums(as<quant::block_q3_K>(b), q8, bs);
     },
     small_q3_K},
    {"q4_K", sizeof(quant::block_q4_K), offsetof(quant::block_q4_K, d), int(offsetof(quant::block_q4_K, dmin)),
     [](const void* b, float* y, int64_t n) {
         quant::dequantize_row_q4_K(static_cast<const quant::block_q4_K*>(b), y, n);
     },
     quant::vec_dot_q4_K_q8_K, quant::vec_dot_q4_K_q8_K_avx2,
     [](const void* b, const int8_t* q8, const int16_t* bs) {
         return quant::q4_K_block_sums(as<quant::block_q4_K>(b), q8, bs);
     },
     small_q45_K},
    {"q5_K", sizeof(quant::block_q5_K), offsetof(quant::block_q5_K, d), int(offsetof(quant::block_q5_K, dmin)),
     [](const void* b, float* y, int64_t n) {
         quant::dequantize_row_q5_K(static_cast<const quant::block_q5_K*>(b), y, n);
     },
     quant::vec_dot_q5_K_q8_K, quant::vec_dot_q5_K_q8_K_avx2,
     [](const void* b, const int8_t* q8, const int16_t* bs) {
         return quant::q5_K_block_sums(as<quant::block_q5_K>(b), q8, bs);
     },
     small_q45_K},
    {"q6_K", sizeof(quant::block_q6_K), offsetof(quant::block_q6_K, d), -1,
     [](const void* b, float* y, int64_t n) {
         quant::dequantize_row_q6_K(static_cast<const quant::block_q6_K*>(b), y, n);
     },
     quant::vec_dot_q6_K_q8_K, quant::vec_dot_q6_K_q8_K_avx2,
     [](const void* b, const int8_t* q8, const int16_t* bs) {
         return quant::q6_K_block_sums(as<quant::block_q6_K>(b), q8, bs);
     },
     small_q6_K},
};

void set_scales(const KSpec& spec, uint8_t* block, float d, float dmin) {
    put_f16(block + spec.d_off, d);
    if (spec.dmin_off >= 0) put_f16(block + spec.dmin_off, dmin);
}

// nb random blocks: random bytes (every code, scale and min reachable), then d and dmin.
std::vector<uint8_t> random_blocks(const KSpec& spec, std::mt19937_64& rng, int64_t nb, bool unit) {
    std::vector<uint8_t> w(spec.bytes * size_t(nb));
    for (auto& byte : w) byte = uint8_t(rng());
    for (int64_t b = 0; b < nb; ++b) {
        uint8_t* block = w.data() + size_t(b) * spec.bytes;
        if (unit)
            set_scales(spec, block, 1.0f, 1.0f);
        else
            set_scales(spec, block, random_scale(rng), random_scale(rng));
    }
    return w;
}

// The row decoded three ways: as stored, with dmin = 0 (the d * sc * q part) and with d = 0
// (minus the dmin * m part; zero for types without mins).
struct Parts {
    std::vector<float> w, scaled, mins;
};

Parts decode_parts(const KSpec& spec, std::vector<uint8_t> blocks, int64_t n) {
    Parts p{std::vector<float>(size_t(n)), std::vector<float>(size_t(n)), std::vector<float>(size_t(n), 0.0f)};
    spec.decode(blocks.data(), p.w.data(), n);
    std::vector<uint8_t> only_d = blocks, only_min = blocks;
    for (size_t off = 0; off < blocks.size(); off += spec.bytes) {
        if (spec.dmin_off < 0) break;
        put_f16(only_d.data() + off + size_t(spec.dmin_off), 0.0f);
        put_f16(only_min.data() + off + spec.d_off, 0.0f);
    }
    spec.decode(only_d.data(), p.scaled.data(), n);
    if (spec.dmin_off >= 0) spec.decode(only_min.data(), p.mins.data(), n);
    return p;
}

// Q8_K activations with any int8 values in [lo, hi] (bsums consistent) and scale d.
std::vector<quant::block_q8_K> int8_activations(std::mt19937_64& rng, int64_t nb, int lo, int hi, float d) {
    std::vector<quant::block_q8_K> y(static_cast<size_t>(nb));
    for (auto& b : y) {
        for (auto& q : b.qs) q = int8_t(lo + int(rng() % uint64_t(hi - lo + 1)));
        for (int i = 0; i < 16; ++i) {
            int sum = 0;
            for (int j = 0; j < 16; ++j) sum += b.qs[16 * i + j];
            b.bsums[i] = int16_t(sum);
        }
        b.d = d;
    }
    return y;
}

std::vector<double> dequantized(const std::vector<quant::block_q8_K>& y) {
    std::vector<double> v(y.size() * quant::kQK_K);
    for (size_t b = 0; b < y.size(); ++b)
        for (int j = 0; j < quant::kQK_K; ++j) v[b * quant::kQK_K + size_t(j)] = double(y[b].d) * double(y[b].qs[j]);
    return v;
}

std::vector<DotFn> kernels_of(const KSpec& spec) {
    std::vector<DotFn> k{spec.scalar};
    if (spec.avx2 && test::have_avx2_kernels()) k.push_back(spec.avx2);
    return k;
}

}  // namespace

TEST_CASE("K-quant blocks have ggml's sizes and field order") {
    CHECK(sizeof(quant::block_q2_K) == 84);
    CHECK(sizeof(quant::block_q3_K) == 110);
    CHECK(offsetof(quant::block_q2_K, qs) == 16);
    CHECK(offsetof(quant::block_q2_K, d) == 80);
    CHECK(offsetof(quant::block_q3_K, qs) == 32);
    CHECK(offsetof(quant::block_q3_K, scales) == 96);
    CHECK(offsetof(quant::block_q3_K, d) == 108);
    CHECK(offsetof(quant::block_q5_K, qh) == 16);
    CHECK(offsetof(quant::block_q6_K, d) == 208);
}

TEST_CASE("the per-weight code and scale accessors agree with the block decoders") {
    // With d = 1 and dmin = 0 a decoded weight is exactly scale * code, with dmin = 1 and d = 0
    // it is minus the min; the accessors CUDA kernels use must give the same numbers.
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (int rep = 0; rep < 200; ++rep) {
        for (const KSpec& spec : kSpecs) {
            const std::string type = spec.name;
            CAPTURE(type);
            std::vector<uint8_t> blocks = random_blocks(spec, rng, 1, true);
            const Parts p = decode_parts(spec, blocks, 256);
            const void* b = blocks.data();
            for (int w = 0; w < 256; ++w) {
                CAPTURE(w);
                int scale = 0, code = 0, min = 0;
                if (type == "q2_K") {
                    const auto& k = as<quant::block_q2_K>(b);
                    scale = k.scales[w / 16] & 15, min = k.scales[w / 16] >> 4, code = quant::q2_K_code(k, w);
                } else if (type == "q3_K") {
                    const auto& k = as<quant::block_q3_K>(b);
                    scale = quant::q3_K_scale(k.scales, w / 16), code = quant::q3_K_code(k, w);
                } else if (type == "q4_K" || type == "q5_K") {
                    const uint8_t* packed =
                        type == "q4_K" ? as<quant::block_q4_K>(b).scales : as<quant::block_q5_K>(b).scales;
                    const quant::KScaleMin sm = quant::k_scale_min(packed, w / 32);
                    scale = sm.scale, min = sm.min;
                    code = type == "q4_K" ? quant::q4_K_code(as<quant::block_q4_K>(b), w)
                                          : quant::q5_K_code(as<quant::block_q5_K>(b), w);
                } else {
                    const auto& k = as<quant::block_q6_K>(b);
                    scale = k.scales[w / 16], code = quant::q6_K_code(k, w);
                }
                CHECK(p.scaled[size_t(w)] == float(scale * code));
                CHECK(p.mins[size_t(w)] == float(-min));
            }
        }
    }
}

TEST_CASE("Q3_K scales unpack from the test's own packing of sixteen 6-bit codes") {
    std::mt19937_64 rng(test::test_seed());
    for (int rep = 0; rep < 100; ++rep) {
        int codes[16];
        for (int& c : codes) c = int(rng() % 64);
        uint8_t packed[12];
        pack_q3_K_scales(codes, packed);
        for (int s = 0; s < 16; ++s) CHECK(quant::q3_K_scale(packed, s) == codes[s] - 32);
    }
}

TEST_CASE("K-quant block sums equal the integer sums of decoded weights times the activations") {
    // Full-range random blocks and int8 activations (-128 included): sumi = sum of
    // (d=1, dmin=0 decode) * q8 and summs = sum of -(d=0, dmin=1 decode) * q8, in int64.
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (const KSpec& spec : kSpecs) {
        const std::string type = spec.name;
        CAPTURE(type);
        for (int rep = 0; rep < 300; ++rep) {
            std::vector<uint8_t> blocks = random_blocks(spec, rng, 1, true);
            const Parts p = decode_parts(spec, blocks, 256);
            const auto y = int8_activations(rng, 1, -128, 127, 1.0f);
            int64_t sumi = 0, summs = 0;
            for (size_t j = 0; j < 256; ++j) {
                sumi += int64_t(p.scaled[j]) * y[0].qs[j];
                summs -= int64_t(p.mins[j]) * y[0].qs[j];
            }
            const quant::KBlockSums s = spec.sums(blocks.data(), y[0].qs, y[0].bsums);
            CHECK(s.sumi == sumi);
            CHECK(s.summs == summs);
        }
    }
}

TEST_CASE("K-quant dots: single blocks with unit scales give exactly the integer sum of decoded weights") {
    // d = dmin = 1 and a Q8_K scale of 1: the dot is sum_j w_j * q8_j with integer w_j from the
    // decoder. It is exact in float32 when every partial sum is below 2^24, which the test makes
    // sure of in two ways: full-range int8 activations with sub-block scales and mins <= 4, and
    // full-range scales with activations in [-2, 2]. Scalar and AVX2 kernels alike.
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (const KSpec& spec : kSpecs) {
        const std::string type = spec.name;
        CAPTURE(type);
        for (DotFn dot : kernels_of(spec)) {
            CAPTURE(dot == spec.scalar ? "scalar" : "avx2");
            for (int rep = 0; rep < 400; ++rep) {
                const bool small_scales = rep % 2 == 0;
                std::vector<uint8_t> blocks = random_blocks(spec, rng, 1, true);
                if (small_scales) spec.small_scales(blocks.data(), rng);
                const Parts p = decode_parts(spec, blocks, 256);
                const auto y =
                    small_scales ? int8_activations(rng, 1, -128, 127, 1.0f) : int8_activations(rng, 1, -2, 2, 1.0f);
                int64_t exact = 0, magnitude = 0;
                for (size_t j = 0; j < 256; ++j) {
                    exact += int64_t(p.w[j]) * y[0].qs[j];
                    magnitude +=
                        (std::abs(int64_t(p.scaled[j])) + std::abs(int64_t(p.mins[j]))) * std::abs(int(y[0].qs[j]));
                }
                REQUIRE(magnitude < (int64_t(1) << 24));
                CHECK(dot(256, blocks.data(), y.data()) == float(exact));
            }
        }
    }
}

TEST_CASE("K-quant dots on rows of 1, 3 and 17 blocks match a float64 product of decoded weights and activations") {
    // Reference: sum_j w_j * a_j in float64, w the decoded weights, a the dequantized Q8_K
    // activations (d * q, exact). The kernels' integers are exact; the float32 part rounds the
    // scale products, the int-to-float conversions and fewer than nb + 12 additions (nb blocks
    // into eight lanes and the mins, then the lanes), each by at most 2^-24 relative, of terms
    // bounded by the magnitude M = sum_j (|d*sc*q|_j + |dmin*m|_j) * |a_j|; the decoder's own
    // rounding of w_j adds 3 * 2^-24 * M. Bound: (nb + 16) * 2^-23 * M (a factor 2 to spare).
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (const KSpec& spec : kSpecs) {
        const std::string type = spec.name;
        CAPTURE(type);
        for (int64_t nb : {1, 3, 17}) {
            CAPTURE(nb);
            for (int rep = 0; rep < 30; ++rep) {
                const int64_t n = nb * 256;
                std::vector<uint8_t> blocks = random_blocks(spec, rng, nb, false);
                const Parts p = decode_parts(spec, blocks, n);
                std::vector<quant::block_q8_K> y(static_cast<size_t>(nb));
                if (rep % 2) {
                    const std::vector<float> x = test::random_normal(rng, n);
                    quant::quantize_row_q8_k(x.data(), y.data(), n);
                } else {
                    for (auto& b : y) b = test::random_q8k_block(rng);
                }
                const std::vector<double> a = dequantized(y);
                double ref = 0, magnitude = 0;
                for (size_t j = 0; j < size_t(n); ++j) {
                    ref += double(p.w[j]) * a[j];
                    magnitude += (std::fabs(double(p.scaled[j])) + std::fabs(double(p.mins[j]))) * std::fabs(a[j]);
                }
                const double bound = double(nb + 16) * 0x1p-23 * magnitude;
                const float scalar = spec.scalar(n, blocks.data(), y.data());
                CHECK(std::fabs(double(scalar) - ref) <= bound);
                if (spec.avx2 && test::have_avx2_kernels()) {
                    const float avx2 = spec.avx2(n, blocks.data(), y.data());
                    CHECK(std::fabs(double(avx2) - ref) <= bound);
                    CHECK(std::fabs(double(avx2) - double(scalar)) <= 2 * bound);
                }
            }
        }
    }
}

TEST_CASE("the AVX2 K-quant dots keep their integers at the extremes of codes and activations") {
    // Largest codes, scales and mins (all bytes 0xFF; Q6_K scales -1 then) and smallest (0x00)
    // against activations all +127, -127 or -128: where a 16-bit intermediate could saturate.
    // Expected: the block sums in float64, times the unit scales; the float32 result rounds at
    // most nb + 12 times relative to |sumi| + |summs|.
    if (!test::avx2_kernels_or_skip()) return;
    for (const KSpec& spec : kSpecs) {
        if (!spec.avx2) continue;
        const std::string type = spec.name;
        CAPTURE(type);
        for (int fill : {0x00, 0xFF, 0x80, 0x7F, 0x55}) {
            CAPTURE(fill);
            const int64_t nb = 3;
            std::vector<uint8_t> blocks(spec.bytes * nb, uint8_t(fill));
            for (int64_t b = 0; b < nb; ++b) set_scales(spec, blocks.data() + b * int64_t(spec.bytes), 1.0f, 1.0f);
            for (int q : {127, -127, -128}) {
                CAPTURE(q);
                std::mt19937_64 unused(1);  // lo == hi: every activation is q
                const auto y = int8_activations(unused, nb, q, q, 1.0f);
                double expected = 0, magnitude = 0;
                for (int64_t b = 0; b < nb; ++b) {
                    const quant::KBlockSums s =
                        spec.sums(blocks.data() + b * int64_t(spec.bytes), y[size_t(b)].qs, y[size_t(b)].bsums);
                    expected += double(s.sumi) - double(s.summs);
                    magnitude += std::fabs(double(s.sumi)) + std::fabs(double(s.summs));
                }
                const double bound = double(nb + 12) * 0x1p-24 * magnitude;
                CHECK(std::fabs(double(spec.avx2(nb * 256, blocks.data(), y.data())) - expected) <= bound);
                CHECK(std::fabs(double(spec.scalar(nb * 256, blocks.data(), y.data())) - expected) <= bound);
            }
        }
    }
}

namespace {

using QuantizeFn = void (*)(const float*, void*, int64_t, const float*);

struct QuantSpec {
    const char* name;
    const KSpec& k;
    QuantizeFn quantize;
    double rms_bound;  // RMS error / RMS value on N(0,1) rows (measured: see the test)
};

const QuantSpec kQuantSpecs[] = {
    {"q4_K", kSpecs[2], quant::quantize_row_q4_K, 0.08},
    {"q5_K", kSpecs[3], quant::quantize_row_q5_K, 0.04},
    {"q6_K", kSpecs[4], quant::quantize_row_q6_K, 0.02},
};

std::vector<float> round_trip(const QuantSpec& q, const std::vector<float>& x, const float* imatrix) {
    const int64_t n = int64_t(x.size());
    std::vector<uint8_t> blocks(q.k.bytes * size_t(n / 256));
    q.quantize(x.data(), blocks.data(), n, imatrix);
    std::vector<float> y(size_t(n), std::nanf(""));
    q.k.decode(blocks.data(), y.data(), n);
    return y;
}

double relative_rms_error(const std::vector<float>& x, const std::vector<float>& y) {
    double err = 0, sig = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
        sig += double(x[i]) * x[i];
    }
    return std::sqrt(err / sig);
}

uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
    return h;
}

}  // namespace

TEST_CASE("K-quant quantizers: N(0,1) rows decode within 8% (Q4_K), 4% (Q5_K), 2% (Q6_K) relative RMS error") {
    // Measured on 16 x 4096 N(0,1) values (six seeds): Q4_K 0.071, Q5_K 0.036, Q6_K 0.018 of the
    // RMS value, with a random imatrix about the same (0.072, 0.036, 0.018); heavy-tailed rows
    // (Student t, 3 degrees of freedom, outliers dominate the RMS) 0.089-0.094, 0.047, 0.025-0.027,
    // checked against 1.5 times the bound. ggml's quantizers give the same bytes on these rows.
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const int64_t n = 16 * 4096;
    const std::vector<float> normal = test::random_normal(rng, n);
    std::vector<float> heavy(static_cast<size_t>(n));
    std::student_t_distribution<float> student(3.0f);
    for (float& v : heavy) v = 0.02f * student(rng);
    std::vector<float> imatrix(static_cast<size_t>(n));
    std::uniform_real_distribution<float> uniform(0.0f, 4.0f);
    for (float& v : imatrix) v = uniform(rng);
    for (const QuantSpec& q : kQuantSpecs) {
        const std::string type = q.name;
        CAPTURE(type);
        const double plain = relative_rms_error(normal, round_trip(q, normal, nullptr));
        // One imatrix row per 4096 columns, as llama-quantize passes it for every row.
        std::vector<float> y_im(static_cast<size_t>(n));
        for (int64_t r = 0; r < 16; ++r) {
            const std::vector<float> row(normal.begin() + r * 4096, normal.begin() + (r + 1) * 4096);
            const std::vector<float> y = round_trip(q, row, imatrix.data());
            std::copy(y.begin(), y.end(), y_im.begin() + r * 4096);
        }
        const double weighted = relative_rms_error(normal, y_im);
        const double tails = relative_rms_error(heavy, round_trip(q, heavy, nullptr));
        MESSAGE(type << " RMS error / RMS value: N(0,1) " << plain << ", with imatrix " << weighted << ", Student t3 "
                     << tails);
        CHECK(plain < q.rms_bound);
        CHECK(weighted < q.rms_bound);
        CHECK(tails < 1.5 * q.rms_bound);
    }
}

TEST_CASE("K-quant quantizers: zero rows, zero sub-blocks, constant rows and extreme magnitudes stay sane") {
    for (const QuantSpec& q : kQuantSpecs) {
        const std::string type = q.name;
        CAPTURE(type);
        for (bool use_imatrix : {false, true}) {
            CAPTURE(use_imatrix);
            const std::vector<float> ones(512, 1.0f);
            const float* im = use_imatrix ? ones.data() : nullptr;
            // All zero: decodes to exact zeros.
            for (float v : round_trip(q, std::vector<float>(512, 0.0f), im)) CHECK(v == 0.0f);
            // A zero sub-block inside a normal block decodes to (nearly) zero; elsewhere sane.
            std::mt19937_64 rng(7);
            std::vector<float> x = test::random_normal(rng, 512);
            std::fill(x.begin() + 32, x.begin() + 64, 0.0f);
            const std::vector<float> y = round_trip(q, x, im);
            for (int i = 32; i < 64; ++i) CHECK(std::fabs(y[size_t(i)]) <= 0.05f);
            CHECK(relative_rms_error(x, y) < q.rms_bound);
            // Constant rows of either sign.
            for (float c : {0.25f, -3.0f}) {
                for (float v : round_trip(q, std::vector<float>(256, c), im))
                    CHECK(std::fabs(v - c) <= 0.02f * std::fabs(c));
            }
            // Magnitudes from 1e-30 (below ggml's group epsilon: zeros) to 1e4: finite, and the
            // relative error bound holds wherever binary16 scales can represent the block.
            for (float scale : {1e-30f, 1e-3f, 1e4f}) {
                CAPTURE(scale);
                std::vector<float> xs = test::random_normal(rng, 256);
                for (float& v : xs) v *= scale;
                const std::vector<float> ys = round_trip(q, xs, im);
                for (float v : ys) REQUIRE(std::isfinite(v));
                if (scale >= 1e-3f)
                    CHECK(relative_rms_error(xs, ys) < 1.5 * q.rms_bound);
                else
                    for (float v : ys) CHECK(std::fabs(v) <= 1e-29f);
            }
        }
    }
}

TEST_CASE("K-quant quantizers write the bytes llama.cpp's quantize_q4_K, q5_K, q6_K write for a fixed row") {
    // The row: 64 blocks from a 64-bit LCG, u = its top 24 bits as [-1, 1), x = u (odd blocks)
    // or u^3 (even) times 2^(b % 8) / 4 for block b, every 61st value times 8, a zero sub-block
    // at 256..287 (every operation exact in IEEE arithmetic); imatrix (i * 31) % 17 / 4, zeros
    // included. The hashes are FNV-1a of the blocks llama.cpp's x86 build of ggml-quants.c
    // writes for them (quantize_q4_K etc.; null imatrix: the _ref quantizers).
    const int n = 64 * 256;
    std::vector<float> x(static_cast<size_t>(n)), imatrix(static_cast<size_t>(n));
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const float u = float(int32_t(state >> 40) - (1 << 23)) / 8388608.0f;
        const int b = i / 256;
        float v = (b % 2 ? u : u * u * u) * float(1 << (b % 8)) / 4.0f;
        if (i % 61 == 0) v *= 8.0f;
        if (i >= 256 && i < 288) v = 0.0f;
        x[size_t(i)] = v;
        imatrix[size_t(i)] = float((i * 31) % 17) / 4.0f;
    }
    struct Pin {
        const QuantSpec& q;
        uint64_t plain, weighted;
    };
    for (const Pin& pin : {Pin{kQuantSpecs[0], 0x99fb34f8ab43bd6full, 0xe968c6170ea971e5ull},
                           Pin{kQuantSpecs[1], 0x56fea8e3f049c240ull, 0xba2672d9af168b2aull},
                           Pin{kQuantSpecs[2], 0xe1ee0fd0b29ee314ull, 0xcdec08ba1f32cfccull}}) {
        const std::string type = pin.q.name;
        CAPTURE(type);
        std::vector<uint8_t> blocks(pin.q.k.bytes * 64);
        pin.q.quantize(x.data(), blocks.data(), n, nullptr);
        CHECK(fnv1a(blocks) == pin.plain);
        pin.q.quantize(x.data(), blocks.data(), n, imatrix.data());
        CHECK(fnv1a(blocks) == pin.weighted);
    }
}

TEST_CASE("K-quant quantizers: a row quantized whole equals its blocks quantized one by one") {
    std::mt19937_64 rng(test::test_seed());
    const std::vector<float> x = test::random_normal(rng, 768);
    std::vector<float> imatrix(768);
    for (float& v : imatrix) v = float(rng() % 100) / 10.0f;
    for (const QuantSpec& q : kQuantSpecs) {
        const std::string type = q.name;
        CAPTURE(type);
        for (const float* im : {static_cast<const float*>(nullptr), static_cast<const float*>(imatrix.data())}) {
            std::vector<uint8_t> whole(q.k.bytes * 3), parts(q.k.bytes * 3);
            q.quantize(x.data(), whole.data(), 768, im);
            for (int b = 0; b < 3; ++b)
                q.quantize(x.data() + 256 * b, parts.data() + q.k.bytes * size_t(b), 256, im ? im + 256 * b : nullptr);
            CHECK(whole == parts);
        }
    }
}
