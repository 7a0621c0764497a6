// The fused decode GEMV's per-type arithmetic (gemv_fused.cuh), for the weight types of a Kimi
// release: Q4_K, Q5_K, Q6_K, IQ4_XS, IQ2_XXS, IQ3_XXS and IQ1_M against Q8_K activations, IQ4_NL
// against Q8_0 (the activation formats ggml pairs them with). A weight block is cut into kParts
// parts, one thread each; a thread loads its part's weight bytes once (load_w: the packed codes as
// int8 lanes in registers, its scales), its part of each token's activation block (load_a: int8
// lanes and their sums) and forms dot(w, a) = the block scales times sums(w, a), the exact integers
// of that part (__dp4a), as ggml's kernels scale them. Summed over a block's parts, sums are the
// integers lib/quant's dots form per block (quant::q4_K_block_sums, iq2xxs_block_sum, ...), so the
// GPU and the CPU differ only in the order their float terms are added. Every function is
// __host__ __device__ over qdev_ops.cuh: cuda/tests/test_qtype_host.cpp runs them on the CPU
// against lib/quant's block sums (exactly) and vec_dot on random blocks.
//
// Byte offsets below are those of the lib/quant block structs (static_assert'ed against them).
// kAlign is the alignment every block of a row has when the matrix starts 4-byte aligned (the
// block size's power-of-two factor, at most 4); the launcher checks the matrix start.
// Activations: block_q8_K (d float at 0, qs at 4, bsums at 260; 4-byte aligned) or block_q8_0
// (d binary16 at 0, qs at 2; 2-byte aligned).
#pragma once

#include <cstddef>
#include <cstdint>

#include "qdev_ops.cuh"
#include "qtype_decode.cuh"
#include "quant/codecs/q8_k.hpp"

namespace strata::cuda {

// The IQ1_S grid (which IQ1_M shares) packed to 4 bits a value, 8 KiB: entry i holds value j + 1
// (0..2) of grid entry i in the low nibble of byte j for j < 4 and in the high nibble of byte j - 4
// for j >= 4, so that e & 0x0f0f0f0f and (e >> 4) & 0x0f0f0f0f are two dp4a operands (the + 1 is
// taken back with the activations' sum). Built at compile time from the one host table.
struct alignas(16) Iq1PackedGrid {
    uint32_t entry[quant::kIq1sGridSize];
};

constexpr uint32_t iq1_pack_entry(uint64_t e) {
    uint32_t p = 0;
    for (int k = 0; k < 4; ++k) {
        p |= ((uint32_t(e >> (8 * k)) + 1u) & 0xfu) << (8 * k);
        p |= ((uint32_t(e >> (8 * (k + 4))) + 1u) & 0xfu) << (8 * k + 4);
    }
    return p;
}

constexpr Iq1PackedGrid iq1_packed_grid() {
    Iq1PackedGrid g{};
    for (int i = 0; i < quant::kIq1sGridSize; ++i) g.entry[i] = iq1_pack_entry(quant::kIq1sGrid[i]);
    return g;
}
static_assert(iq1_pack_entry(0x00ff01ff00ff0100ull) == 0x11002201u, "byte j: value j + 1 low, value 4 + j + 1 high");

inline const Iq1PackedGrid kHostIq1PackedGrid = iq1_packed_grid();

// Lookup tables the dot parts read (the device kernel points them at shared-memory copies).
struct DotTables {
    const uint32_t* iq1_packed = nullptr;   // IQ1_M: Iq1PackedGrid
    const uint64_t* iq2xxs_grid = nullptr;  // IQ2_XXS
    const uint8_t* iq2_signs = nullptr;     // IQ2_XXS, IQ3_XXS
    const uint32_t* iq3xxs_grid = nullptr;  // IQ3_XXS
};

inline DotTables host_dot_tables() {
    DotTables t;
    t.iq1_packed = kHostIq1PackedGrid.entry;
    t.iq2xxs_grid = quant::kIq2xxsGrid;
    t.iq2_signs = quant::kIq2Signs;
    t.iq3xxs_grid = quant::kIq3xxsGrid;
    return t;
}

// The exact integers of one part: i0 and i1 as each type defines them (unused: 0).
struct PartSums {
    int32_t i0 = 0, i1 = 0;
};

namespace qdot {

constexpr uint32_t kLow4 = 0x0f0f0f0fu;
constexpr uint32_t kOnes = 0x01010101u;
constexpr int kQ8KBytes = int(sizeof(quant::block_q8_K));  // 292
constexpr int kQ8_0Bytes = int(sizeof(quant::block_q8_0));  // 34
static_assert(offsetof(quant::block_q8_K, qs) == 4 && offsetof(quant::block_q8_K, bsums) == 260, "block_q8_K layout");
static_assert(offsetof(quant::block_q8_0, qs) == 2, "block_q8_0 layout");

// The IQ4 codebook (kIq4nlValues) as four words of four int8 lanes, for qdev::lookup16.
constexpr uint32_t iq4_word(int i) {
    uint32_t w = 0;
    for (int k = 0; k < 4; ++k) w |= uint32_t(uint8_t(quant::kIq4nlValues[4 * i + k])) << (8 * k);
    return w;
}

// Q8_K activations: the int8 lanes at value offset v (a multiple of 4) of block ab, and its scale.
STRATA_HD int q8k_word(const uint8_t* ab, int v) { return int(qdev::ld32<4>(ab + 4 + v)); }
STRATA_HD float q8k_d(const uint8_t* ab) {
    return quant::bits_to_f32(qdev::ld32<4>(ab));
}

}  // namespace qdot

template <uint32_t kType>
struct QDot;  // specialized for the fused types below

// --- Q4_K, Q5_K ----------------------------------------------------------------------------------
// 16 parts: part p = 4k + i covers bytes 8i..8i+7 of the k-th 32-byte run of qs, i.e. weights
// 64k + 8i + 0..7 (low nibbles: sub-block 2k) and 64k + 32 + 8i + 0..7 (high nibbles: 2k + 1).
// Per part: sc_lo * sum(q q8) + sc_hi * sum(q q8) and m_lo * sum(q8) + m_hi * sum(q8), i.e. the
// part's share of quant::q4_K_block_sums' sumi and summs; y += d_x * (d * sumi - dmin * summs).

struct KPartW {
    int v[4];               // codes: low sub-block words 0, 1; high sub-block words 0, 1
    int sc_lo, sc_hi, m_lo, m_hi;
    float d, dmin;
};
struct KPartA {
    int a[4];    // the activations of the same weights
    int n_lo, n_hi;  // their sums over the low and high sub-block's eight
    float d;
};

struct Q45KCommon {
    static constexpr uint32_t kAct = quant::kTypeQ8_K;
    static constexpr int kElems = 256;
    static constexpr int kParts = 16;
    using W = KPartW;
    using A = KPartA;

    STRATA_HD static A load_a(const uint8_t* ab, int p) {
        const int k = p / 4, i = p % 4;
        A x;
        x.a[0] = qdot::q8k_word(ab, 64 * k + 8 * i);
        x.a[1] = qdot::q8k_word(ab, 64 * k + 8 * i + 4);
        x.a[2] = qdot::q8k_word(ab, 64 * k + 32 + 8 * i);
        x.a[3] = qdot::q8k_word(ab, 64 * k + 32 + 8 * i + 4);
        x.n_lo = qdev::dp4a(int(qdot::kOnes), x.a[0], qdev::dp4a(int(qdot::kOnes), x.a[1], 0));
        x.n_hi = qdev::dp4a(int(qdot::kOnes), x.a[2], qdev::dp4a(int(qdot::kOnes), x.a[3], 0));
        x.d = qdot::q8k_d(ab);
        return x;
    }
    // i0: the part's share of sumi, i1: of summs (quant::KBlockSums).
    STRATA_HD static PartSums sums(const W& w, const A& x) {
        const int s_lo = qdev::dp4a(w.v[0], x.a[0], qdev::dp4a(w.v[1], x.a[1], 0));
        const int s_hi = qdev::dp4a(w.v[2], x.a[2], qdev::dp4a(w.v[3], x.a[3], 0));
        return {w.sc_lo * s_lo + w.sc_hi * s_hi, w.m_lo * x.n_lo + w.m_hi * x.n_hi};
    }
    STRATA_HD static float dot(const W& w, const A& x) {
        const PartSums s = sums(w, x);
        return x.d * (w.d * float(s.i0) - w.dmin * float(s.i1));
    }
    STRATA_HD static void scales(W& w, const uint8_t* scales, int k) {
        const quant::KScaleMin lo = quant::k_scale_min(scales, 2 * k), hi = quant::k_scale_min(scales, 2 * k + 1);
        w.sc_lo = lo.scale;
        w.m_lo = lo.min;
        w.sc_hi = hi.scale;
        w.m_hi = hi.min;
    }
};

template <>
struct QDot<quant::kTypeQ4_K> : Q45KCommon {
    static constexpr int kBytes = 144, kAlign = 4;
    static_assert(sizeof(quant::block_q4_K) == kBytes && offsetof(quant::block_q4_K, scales) == 4 &&
                      offsetof(quant::block_q4_K, qs) == 16,
                  "block_q4_K layout");
    STRATA_HD static W load_w(const uint8_t* b, int p, const DotTables&) {
        const int k = p / 4, i = p % 4;
        const uint32_t q0 = qdev::ld32<4>(b + 16 + 32 * k + 8 * i), q1 = qdev::ld32<4>(b + 20 + 32 * k + 8 * i);
        W w;
        w.v[0] = int(q0 & qdot::kLow4);
        w.v[1] = int(q1 & qdot::kLow4);
        w.v[2] = int((q0 >> 4) & qdot::kLow4);
        w.v[3] = int((q1 >> 4) & qdot::kLow4);
        scales(w, b + 4, k);
        const uint32_t dd = qdev::ld32<4>(b);
        w.d = qdev::f16(uint16_t(dd & 0xffffu));
        w.dmin = qdev::f16(uint16_t(dd >> 16));
        return w;
    }
};

template <>
struct QDot<quant::kTypeQ5_K> : Q45KCommon {
    static constexpr int kBytes = 176, kAlign = 4;
    static_assert(sizeof(quant::block_q5_K) == kBytes && offsetof(quant::block_q5_K, scales) == 4 &&
                      offsetof(quant::block_q5_K, qh) == 16 && offsetof(quant::block_q5_K, qs) == 48,
                  "block_q5_K layout");
    STRATA_HD static W load_w(const uint8_t* b, int p, const DotTables&) {
        const int k = p / 4, i = p % 4;
        const uint32_t q0 = qdev::ld32<4>(b + 48 + 32 * k + 8 * i), q1 = qdev::ld32<4>(b + 52 + 32 * k + 8 * i);
        // Fifth bits: bit 2k (low sub-block) and 2k + 1 (high) of qh[8i + 0..7].
        const uint32_t h0 = qdev::ld32<4>(b + 16 + 8 * i), h1 = qdev::ld32<4>(b + 20 + 8 * i);
        W w;
        w.v[0] = int((q0 & qdot::kLow4) | (((h0 >> (2 * k)) & qdot::kOnes) << 4));
        w.v[1] = int((q1 & qdot::kLow4) | (((h1 >> (2 * k)) & qdot::kOnes) << 4));
        w.v[2] = int(((q0 >> 4) & qdot::kLow4) | (((h0 >> (2 * k + 1)) & qdot::kOnes) << 4));
        w.v[3] = int(((q1 >> 4) & qdot::kLow4) | (((h1 >> (2 * k + 1)) & qdot::kOnes) << 4));
        scales(w, b + 4, k);
        const uint32_t dd = qdev::ld32<4>(b);
        w.d = qdev::f16(uint16_t(dd & 0xffffu));
        w.dmin = qdev::f16(uint16_t(dd >> 16));
        return w;
    }
};

// --- Q6_K ----------------------------------------------------------------------------------------
// 16 parts: part p = 8h + i covers l = 4i..4i+3 of half h, i.e. weights 128h + 32g + 4i + 0..3 for
// g = 0..3 (sub-block 8h + 2g + i/4 each): the low nibbles of ql[64h + 4i..] (g = 0, 2: low and high
// nibble) and ql[64h + 32 + 4i..] (g = 1, 3), the high bits from qh[32h + 4i..] bits 2g..2g+1.
// y += d_x * d * sum_g sc_g * sum((q - 32) q8).

template <>
struct QDot<quant::kTypeQ6_K> {
    static constexpr uint32_t kAct = quant::kTypeQ8_K;
    static constexpr int kElems = 256, kBytes = 210, kAlign = 2, kParts = 16;
    static_assert(sizeof(quant::block_q6_K) == kBytes && offsetof(quant::block_q6_K, qh) == 128 &&
                      offsetof(quant::block_q6_K, scales) == 192 && offsetof(quant::block_q6_K, d) == 208,
                  "block_q6_K layout");
    struct W {
        int v[4];   // q - 32 as int8 lanes, quarter g
        int sc[4];  // the scale of each
        float d;
    };
    struct A {
        int a[4];
        float d;
    };
    STRATA_HD static W load_w(const uint8_t* b, int p, const DotTables&) {
        const int h = p / 8, i = p % 8;
        const uint32_t qa = qdev::ld32<2>(b + 64 * h + 4 * i), qb = qdev::ld32<2>(b + 64 * h + 32 + 4 * i);
        const uint32_t qh = qdev::ld32<2>(b + 128 + 32 * h + 4 * i);
        constexpr uint32_t k2 = 0x03030303u, k32 = 0x20202020u;
        W w;
        w.v[0] = int(qdev::vsub4((qa & qdot::kLow4) | ((qh & k2) << 4), k32));
        w.v[1] = int(qdev::vsub4((qb & qdot::kLow4) | (((qh >> 2) & k2) << 4), k32));
        w.v[2] = int(qdev::vsub4(((qa >> 4) & qdot::kLow4) | (((qh >> 4) & k2) << 4), k32));
        w.v[3] = int(qdev::vsub4(((qb >> 4) & qdot::kLow4) | (((qh >> 6) & k2) << 4), k32));
        for (int g = 0; g < 4; ++g) w.sc[g] = int(int8_t(b[192 + 8 * h + 2 * g + i / 4]));
        w.d = qdev::f16(uint16_t(qdev::ld16(b + 208)));
        return w;
    }
    STRATA_HD static A load_a(const uint8_t* ab, int p) {
        const int h = p / 8, i = p % 8;
        A x;
        for (int g = 0; g < 4; ++g) x.a[g] = qdot::q8k_word(ab, 128 * h + 32 * g + 4 * i);
        x.d = qdot::q8k_d(ab);
        return x;
    }
    // i0: the part's share of quant::q6_K_block_sums' sumi.
    STRATA_HD static PartSums sums(const W& w, const A& x) {
        int sumi = 0;
        for (int g = 0; g < 4; ++g) sumi += w.sc[g] * qdev::dp4a(w.v[g], x.a[g], 0);
        return {sumi, 0};
    }
    STRATA_HD static float dot(const W& w, const A& x) { return x.d * w.d * float(sums(w, x).i0); }
};

// --- IQ4_XS, IQ4_NL ------------------------------------------------------------------------------
// IQ4_XS: 16 parts, part p = 2s + half covers bytes 8 half..8 half + 7 of sub-block s's 16 bytes:
// weights 32s + 8 half + 0..7 (low nibbles) and 32s + 16 + 8 half + 0..7 (high nibbles).
// y += d_x * d * (code6_s - 32) * sum(value q8).
// IQ4_NL: 2 parts of a 32-weight block, part p covers bytes 8p..8p+7: weights 8p + 0..7 and
// 16 + 8p + 0..7. y += (d_x * d) * sum(value q8), against Q8_0 blocks.

struct Iq4PartW {
    int v[4];  // codebook values: low words 0, 1; high words 0, 1
    int ls;    // IQ4_XS: code6 - 32; IQ4_NL: 1
    float d;
};
struct Iq4PartA {
    int a[4];
    float d;
};

STRATA_HD void iq4_values(Iq4PartW& w, uint32_t q0, uint32_t q1) {
    constexpr uint32_t table[4] = {qdot::iq4_word(0), qdot::iq4_word(1), qdot::iq4_word(2), qdot::iq4_word(3)};
    w.v[0] = int(qdev::lookup16(table, q0));
    w.v[1] = int(qdev::lookup16(table, q1));
    w.v[2] = int(qdev::lookup16(table, q0 >> 4));
    w.v[3] = int(qdev::lookup16(table, q1 >> 4));
}

template <>
struct QDot<quant::kTypeIQ4_XS> {
    static constexpr uint32_t kAct = quant::kTypeQ8_K;
    static constexpr int kElems = 256, kBytes = 136, kAlign = 4, kParts = 16;
    static_assert(sizeof(quant::block_iq4_xs) == kBytes && offsetof(quant::block_iq4_xs, qs) == 8, "block_iq4_xs layout");
    using W = Iq4PartW;
    using A = Iq4PartA;
    STRATA_HD static W load_w(const uint8_t* b, int p, const DotTables&) {
        const int s = p / 2, half = p % 2;
        W w;
        iq4_values(w, qdev::ld32<4>(b + 8 + 16 * s + 8 * half), qdev::ld32<4>(b + 12 + 16 * s + 8 * half));
        w.ls = quant::iq4xs_sub_scale(*reinterpret_cast<const quant::block_iq4_xs*>(b), s);
        w.d = qdev::f16(uint16_t(qdev::ld16(b)));
        return w;
    }
    STRATA_HD static A load_a(const uint8_t* ab, int p) {
        const int s = p / 2, half = p % 2;
        A x;
        x.a[0] = qdot::q8k_word(ab, 32 * s + 8 * half);
        x.a[1] = qdot::q8k_word(ab, 32 * s + 8 * half + 4);
        x.a[2] = qdot::q8k_word(ab, 32 * s + 16 + 8 * half);
        x.a[3] = qdot::q8k_word(ab, 32 * s + 16 + 8 * half + 4);
        x.d = qdot::q8k_d(ab);
        return x;
    }
    // i0: (code6_s - 32) * the part's share of iq4xs_sub_sum of sub-block s.
    STRATA_HD static PartSums sums(const W& w, const A& x) {
        int s = 0;
        for (int k = 0; k < 4; ++k) s = qdev::dp4a(w.v[k], x.a[k], s);
        return {w.ls * s, 0};
    }
    STRATA_HD static float dot(const W& w, const A& x) { return x.d * w.d * float(sums(w, x).i0); }
};

template <>
struct QDot<quant::kTypeIQ4_NL> {
    static constexpr uint32_t kAct = quant::kTypeQ8_0;
    static constexpr int kElems = 32, kBytes = 18, kAlign = 2, kParts = 2;
    static_assert(sizeof(quant::block_iq4_nl) == kBytes && offsetof(quant::block_iq4_nl, qs) == 2, "block_iq4_nl layout");
    using W = Iq4PartW;
    using A = Iq4PartA;
    STRATA_HD static W load_w(const uint8_t* b, int p, const DotTables&) {
        W w;
        iq4_values(w, qdev::ld32<2>(b + 2 + 8 * p), qdev::ld32<2>(b + 6 + 8 * p));
        w.ls = 1;
        w.d = qdev::f16(uint16_t(qdev::ld16(b)));
        return w;
    }
    STRATA_HD static A load_a(const uint8_t* ab, int p) {
        A x;
        x.a[0] = int(qdev::ld32<2>(ab + 2 + 8 * p));
        x.a[1] = int(qdev::ld32<2>(ab + 6 + 8 * p));
        x.a[2] = int(qdev::ld32<2>(ab + 18 + 8 * p));
        x.a[3] = int(qdev::ld32<2>(ab + 22 + 8 * p));
        x.d = qdev::f16(uint16_t(qdev::ld16(ab)));
        return x;
    }
    // i0: the part's share of the block's sum of value * q8.
    STRATA_HD static PartSums sums(const W& w, const A& x) {
        int s = 0;
        for (int k = 0; k < 4; ++k) s = qdev::dp4a(w.v[k], x.a[k], s);
        return {s, 0};
    }
    STRATA_HD static float dot(const W& w, const A& x) {
        return (x.d * w.d) * float(sums(w, x).i0);  // ggml: d_q8 * d_iq4, then times sumi
    }
};

// --- IQ2_XXS, IQ3_XXS ----------------------------------------------------------------------------
// 8 parts, part s = one 32-weight sub-block (4 groups of 8): grid magnitudes with their signs
// applied as int8 lanes (8 words), and 2 ls + 1. y += f * d_x * d * (2 ls + 1) * sum(w q8), with
// f = 1/8 (IQ2_XXS) or 1/4 (IQ3_XXS), as iq2xxs_block_sum / iq3xxs_block_sum are scaled.

struct IqSubW {
    int v[8];
    int ls;  // 2 ls + 1
    float d;
};
struct IqSubA {
    int a[8];
    float d;
};

STRATA_HD IqSubA load_sub_a(const uint8_t* ab, int s) {
    IqSubA x;
    for (int k = 0; k < 8; ++k) x.a[k] = qdot::q8k_word(ab, 32 * s + 4 * k);
    x.d = qdot::q8k_d(ab);
    return x;
}

STRATA_HD int sub_dot(const int (&v)[8], const int (&a)[8]) {
    int s = 0;
    for (int k = 0; k < 8; ++k) s = qdev::dp4a(v[k], a[k], s);
    return s;
}

template <>
struct QDot<quant::kTypeIQ2_XXS> {
    static constexpr uint32_t kAct = quant::kTypeQ8_K;
    static constexpr int kElems = 256, kBytes = 66, kAlign = 2, kParts = 8;
    static_assert(sizeof(quant::block_iq2_xxs) == kBytes && offsetof(quant::block_iq2_xxs, qs) == 2, "block_iq2_xxs layout");
    using W = IqSubW;
    using A = IqSubA;
    STRATA_HD static W load_w(const uint8_t* b, int s, const DotTables& t) {
        const uint32_t idx = qdev::ld32<2>(b + 2 + 8 * s);   // four grid indices (a, iq2_block.hpp)
        const uint32_t sgn = qdev::ld32<2>(b + 6 + 8 * s);   // four 7-bit sign indices and ls (b)
        W w;
        for (int l = 0; l < 4; ++l) {
            const uint64_t e = t.iq2xxs_grid[(idx >> (8 * l)) & 0xffu];
            const uint32_t signs = t.iq2_signs[(sgn >> (7 * l)) & 127u];
            w.v[2 * l] = int(qdev::apply_signs4(uint32_t(e), signs));
            w.v[2 * l + 1] = int(qdev::apply_signs4(uint32_t(e >> 32), signs >> 4));
        }
        w.ls = 2 * int(sgn >> 28) + 1;
        w.d = qdev::f16(uint16_t(qdev::ld16(b)));
        return w;
    }
    STRATA_HD static A load_a(const uint8_t* ab, int s) { return load_sub_a(ab, s); }
    // i0: sub-block s's term of iq2xxs_block_sum.
    STRATA_HD static PartSums sums(const W& w, const A& x) { return {w.ls * sub_dot(w.v, x.a), 0}; }
    STRATA_HD static float dot(const W& w, const A& x) { return 0.125f * (w.d * x.d) * float(sums(w, x).i0); }
};

template <>
struct QDot<quant::kTypeIQ3_XXS> {
    static constexpr uint32_t kAct = quant::kTypeQ8_K;
    static constexpr int kElems = 256, kBytes = 98, kAlign = 2, kParts = 8;
    static_assert(sizeof(quant::block_iq3_xxs) == kBytes && offsetof(quant::block_iq3_xxs, qs) == 2, "block_iq3_xxs layout");
    using W = IqSubW;
    using A = IqSubA;
    STRATA_HD static W load_w(const uint8_t* b, int s, const DotTables& t) {
        const uint32_t i0 = qdev::ld32<2>(b + 2 + 8 * s), i1 = qdev::ld32<2>(b + 6 + 8 * s);  // 8 grid indices
        const uint32_t sgn = qdev::ld32<2>(b + 2 + 64 + 4 * s);  // iq3xxs_sign_word
        W w;
        for (int l = 0; l < 4; ++l) {
            const uint32_t pair = l < 2 ? i0 : i1;
            const uint32_t lo = t.iq3xxs_grid[(pair >> (16 * (l % 2))) & 0xffu];
            const uint32_t hi = t.iq3xxs_grid[(pair >> (16 * (l % 2) + 8)) & 0xffu];
            const uint32_t signs = t.iq2_signs[(sgn >> (7 * l)) & 127u];
            w.v[2 * l] = int(qdev::apply_signs4(lo, signs));
            w.v[2 * l + 1] = int(qdev::apply_signs4(hi, signs >> 4));
        }
        w.ls = 2 * int(sgn >> 28) + 1;
        w.d = qdev::f16(uint16_t(qdev::ld16(b)));
        return w;
    }
    STRATA_HD static A load_a(const uint8_t* ab, int s) { return load_sub_a(ab, s); }
    // i0: sub-block s's term of iq3xxs_block_sum.
    STRATA_HD static PartSums sums(const W& w, const A& x) { return {w.ls * sub_dot(w.v, x.a), 0}; }
    STRATA_HD static float dot(const W& w, const A& x) { return 0.25f * (w.d * x.d) * float(sums(w, x).i0); }
};

// --- IQ1_M ---------------------------------------------------------------------------------------
// 8 parts, part s = sub-block s: groups 4s..4s+3 (units 2s: groups 4s, 4s+1; 2s+1: 4s+2, 4s+3).
// Per part the shares of quant::iq1m_block_sums: sumi1 = sum_u ls_u * sum(grid q8) and
// sumi2 = sum_u ls_u * sum_g sign_g * sum(q8 over g); y += d_x * d * (sumi1 + sumi2 / 8).

template <>
struct QDot<quant::kTypeIQ1_M> {
    static constexpr uint32_t kAct = quant::kTypeQ8_K;
    static constexpr int kElems = 256, kBytes = 56, kAlign = 4, kParts = 8;
    static_assert(sizeof(quant::block_iq1_m) == kBytes && offsetof(quant::block_iq1_m, qh) == 32 &&
                      offsetof(quant::block_iq1_m, scales) == 48,
                  "block_iq1_m layout");
    struct W {
        int v[8];     // grid values + 1 (0, 1, 2) of the four groups, two words each
        int ls[2];    // 2l + 1 of units 2s and 2s + 1
        int sign[4];  // +-1: the sign of each group's delta
        float d;
    };
    struct A {
        int a[8];
        int n[4];  // the sums of each group's eight activations
        float d;
    };
    STRATA_HD static W load_w(const uint8_t* b, int s, const DotTables& t) {
        const auto& blk = *reinterpret_cast<const quant::block_iq1_m*>(b);
        const uint32_t qs = qdev::ld32<4>(b + 4 * s);
        const uint32_t qh = qdev::ld16(b + 32 + 2 * s);  // nibble k: group 4s + k (iq1m_group_nibble)
        W w;
        for (int k = 0; k < 4; ++k) {
            const uint32_t nib = (qh >> (4 * k)) & 0xfu;
            const uint32_t e = t.iq1_packed[((qs >> (8 * k)) & 0xffu) | (nib & 7u) << 8];
            w.v[2 * k] = int(e & qdot::kLow4);
            w.v[2 * k + 1] = int((e >> 4) & qdot::kLow4);
            w.sign[k] = nib & 8u ? -1 : 1;
        }
        w.ls[0] = quant::iq1m_unit_scale(blk, 2 * s);
        w.ls[1] = quant::iq1m_unit_scale(blk, 2 * s + 1);
        w.d = qdev::f16(quant::iq1m_d_bits(blk));
        return w;
    }
    STRATA_HD static A load_a(const uint8_t* ab, int s) {
        A x;
        for (int k = 0; k < 8; ++k) x.a[k] = qdot::q8k_word(ab, 32 * s + 4 * k);
        for (int k = 0; k < 4; ++k)
            x.n[k] = qdev::dp4a(int(qdot::kOnes), x.a[2 * k], qdev::dp4a(int(qdot::kOnes), x.a[2 * k + 1], 0));
        x.d = qdot::q8k_d(ab);
        return x;
    }
    // i0, i1: the part's shares of quant::iq1m_block_sums' sumi1 and sumi2.
    STRATA_HD static PartSums sums(const W& w, const A& x) {
        int sumi1 = 0, sumi2 = 0;
        for (int u = 0; u < 2; ++u) {
            int grid = 0, delta = 0;
            for (int k = 2 * u; k < 2 * u + 2; ++k) {  // sum (g + 1) q8 - sum q8 = sum g q8
                grid = qdev::dp4a(w.v[2 * k], x.a[2 * k], qdev::dp4a(w.v[2 * k + 1], x.a[2 * k + 1], grid)) - x.n[k];
                delta += w.sign[k] * x.n[k];
            }
            sumi1 += w.ls[u] * grid;
            sumi2 += w.ls[u] * delta;
        }
        return {sumi1, sumi2};
    }
    STRATA_HD static float dot(const W& w, const A& x) {
        const PartSums s = sums(w, x);
        return (w.d * x.d) * (float(s.i0) + 0.125f * float(s.i1));
    }
};

// Every fused type, as X(type id).
#define STRATA_CUDA_FUSED_QTYPES(X)                                                                         \
    X(quant::kTypeQ4_K) X(quant::kTypeQ5_K) X(quant::kTypeQ6_K) X(quant::kTypeIQ4_XS) X(quant::kTypeIQ4_NL) \
    X(quant::kTypeIQ2_XXS) X(quant::kTypeIQ3_XXS) X(quant::kTypeIQ1_M)

}  // namespace strata::cuda
