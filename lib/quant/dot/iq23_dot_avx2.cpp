// AVX2 IQ2/IQ3 x Q8_K kernels (this file alone is compiled with -mavx2 -mfma -mf16c).
//
// Every kernel forms each superblock's exact integer sum (the *_block_sum of iq2_block.hpp /
// iq3_block.hpp), reduces it to one int32 and takes the scalar kernel's float step,
// acc + (d * d_q8) * float(sum) with two roundings: results are bit-identical to iq23_dot.cpp.
// Technique, per superblock:
//  - sign bytes: IQ2_XXS/IQ3_XXS pack four 7-bit sign-table indices per sub-block into one uint32;
//    instead of 32 table lookups the eight words are spread to one byte per group with shifts, and
//    the table's 8th (even parity) bit is added with a 16-entry pshufb (a static_assert checks that
//    rule against the generated table). IQ2_XS does the same from its 16-bit words; IQ2_S and IQ3_S
//    store sign bytes directly.
//  - a sub-block's four sign bytes become 32 byte masks with pshufb + and + add; vpsign negates the
//    q8 bytes under them, vpmaddubsw(grid, signed q8) gives int16 pairs (|pair| <= 2 * 62 * 127, no
//    saturation) and vpmaddwd by the multipliers 2 ls + 1 gives int32. vpsign cannot negate -128:
//    activations are assumed in [-127, 127], which quantize_row_q8_k guarantees (ggml's AVX2 kernels
//    assume it too).
//  - grid entries are fetched with broadcast loads (pure load uops) merged with blends.
//  - what a superblock needs besides its grid loads (sign bytes, multipliers, the 9- and 10-bit
//    indices of IQ3_S and IQ2_XS) is computed with SIMD into a small stack record one superblock
//    ahead, so that its latency (and the store-to-load forwarding) overlaps the previous
//    superblock's work; the sub-block loop then reads it with broadcast / scalar loads.
//    (Measured on Zen 4: IQ2_S went from 238 to about 190 ns per 4096-weight row this way.)
// Only intrinsics and this file's own functions are used here: an inline function from a shared
// header compiled with AVX2 could be picked by the linker for the portable callers too.
#if defined(__x86_64__)

#include <immintrin.h>

#include "quant/iq/iq2_block.hpp"
#include "quant/iq/iq3_block.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::quant {

namespace {

constexpr bool signs_follow_parity_rule() {
    for (int i = 0; i < 128; ++i) {
        int bits = 0;
        for (int b = 0; b < 7; ++b) bits += (i >> b) & 1;
        if (kIq2Signs[i] != uint8_t(i | (bits & 1) << 7)) return false;
    }
    return true;
}
static_assert(signs_follow_parity_rule(), "ksigns_iq2xs[i] must be i plus an even-parity bit 7");

#define STRATA_AI [[gnu::always_inline]] inline

STRATA_AI __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
STRATA_AI void store256(void* p, __m256i v) { _mm256_store_si256(static_cast<__m256i*>(p), v); }
STRATA_AI uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}
STRATA_AI uint64_t load_u64(const uint8_t* p) {
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return v;
}

STRATA_AI int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

// --- Sign bytes, multipliers -----------------------------------------------------------------

// Eight uint32 words holding four 7-bit indices at bits 0, 7, 14, 21 -> byte l of word s = index l.
STRATA_AI __m256i spread_packed7(__m256i w) {
    const __m256i m7 = _mm256_set1_epi32(0x7f);
    __m256i f = _mm256_and_si256(w, m7);
    f = _mm256_or_si256(f, _mm256_and_si256(_mm256_slli_epi32(w, 1), _mm256_slli_epi32(m7, 8)));
    f = _mm256_or_si256(f, _mm256_and_si256(_mm256_slli_epi32(w, 2), _mm256_slli_epi32(m7, 16)));
    return _mm256_or_si256(f, _mm256_and_si256(_mm256_slli_epi32(w, 3), _mm256_slli_epi32(m7, 24)));
}

// kIq2Signs[byte] for every byte (< 128): bit 7 = parity of bits 0..6.
STRATA_AI __m256i add_parity_bit(__m256i f) {
    const __m256i odd_nibble = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0,  //
                                                0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    const __m256i folded = _mm256_and_si256(_mm256_xor_si256(f, _mm256_srli_epi32(f, 4)), _mm256_set1_epi8(0x0f));
    return _mm256_or_si256(f, _mm256_shuffle_epi8(odd_nibble, folded));
}

// (2 ls + 1) as a pair of int16 in each dword, for ls in 0..15 in each dword.
STRATA_AI __m256i odd_pairs(__m256i ls) {
    const __m256i odd = _mm256_or_si256(_mm256_add_epi32(ls, ls), _mm256_set1_epi32(1));
    return _mm256_or_si256(odd, _mm256_slli_epi32(odd, 16));
}

// Byte 2i = low nibble of byte i of x, byte 2i+1 its high nibble (i < 8).
STRATA_AI __m128i split_nibbles(__m128i x) {
    const __m128i m4 = _mm_set1_epi8(0x0f);
    return _mm_unpacklo_epi8(_mm_and_si128(x, m4), _mm_and_si128(_mm_srli_epi16(x, 4), m4));
}

// IQ2_XS / IQ2_S: groups 0-1 of sub-block s (the low 128 bits of its vector) use the low nibble of
// scales[s], groups 2-3 the high one. With the 16 multipliers 2 ls + 1 as bytes 2s + half in both
// lanes, kHalfScaleSpread[s] picks sub-block s's two as int16 words (low lane, high lane).
struct alignas(32) HalfScaleSpread {
    int8_t mask[8][32];
};
constexpr HalfScaleSpread make_half_scale_spread() {
    HalfScaleSpread t{};
    for (int s = 0; s < 8; ++s)
        for (int j = 0; j < 32; ++j) t.mask[s][j] = j % 2 ? int8_t(-128) : int8_t(2 * s + j / 16);
    return t;
}
constexpr HalfScaleSpread kHalfScaleSpread = make_half_scale_spread();

STRATA_AI __m256i half_scales(const uint8_t* scales) {
    const __m128i ls = split_nibbles(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales)));
    return _mm256_broadcastsi128_si256(_mm_or_si128(_mm_add_epi8(ls, ls), _mm_set1_epi8(1)));
}
STRATA_AI __m256i half_scale(__m256i scales16, int s) {
    return _mm256_shuffle_epi8(scales16, _mm256_load_si256(reinterpret_cast<const __m256i*>(kHalfScaleSpread.mask[s])));
}

// --- Grid fetches and the sub-block product --------------------------------------------------

// Four 8-byte grid entries as one vector (entry k in bytes 8k..8k+7). Blends run on any vector
// pipe (vmovq + vmovhpd + vinserti128 measured the same).
STRATA_AI __m256i grid4x64(const uint64_t* grid, unsigned i0, unsigned i1, unsigned i2, unsigned i3) {
    const __m256i e0 = _mm256_set1_epi64x(static_cast<long long>(grid[i0]));
    const __m256i e1 = _mm256_set1_epi64x(static_cast<long long>(grid[i1]));
    const __m256i e2 = _mm256_set1_epi64x(static_cast<long long>(grid[i2]));
    const __m256i e3 = _mm256_set1_epi64x(static_cast<long long>(grid[i3]));
    return _mm256_blend_epi32(_mm256_blend_epi32(e0, e1, 0x0c), _mm256_blend_epi32(e2, e3, 0xc0), 0xf0);
}

// Eight 4-byte grid entries as one vector (entry k in bytes 4k..4k+3). vpgatherdd measured far
// slower on Zen 4 (about 490 against 265 ns per IQ3_XXS row).
template <typename Index>
STRATA_AI __m256i grid8x32(const uint32_t* grid, const Index* idx) {
    __m256i e[8];
    #pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) e[k] = _mm256_set1_epi32(int(grid[idx[k]]));
    const __m256i e01 = _mm256_blend_epi32(e[0], e[1], 0x02), e23 = _mm256_blend_epi32(e[2], e[3], 0x08);
    const __m256i e45 = _mm256_blend_epi32(e[4], e[5], 0x20), e67 = _mm256_blend_epi32(e[6], e[7], 0x80);
    return _mm256_blend_epi32(_mm256_blend_epi32(e01, e23, 0x0c), _mm256_blend_epi32(e45, e67, 0xc0), 0xf0);
}

// The 32 q8 bytes of a sub-block negated where the group's sign bit is set; group l's 8 sign bits
// are byte l of sign4.
STRATA_AI __m256i apply_signs(__m256i q8, uint32_t sign4) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(int(sign4)), spread);
    // (bytes & bit) + 127 is 127 (positive) for a clear bit and 128..255 (negative) for a set one.
    return _mm256_sign_epi8(q8, _mm256_add_epi8(_mm256_and_si256(bytes, bit), _mm256_set1_epi8(127)));
}

// One sub-block: its 32 grid values times signed q8, summed in pairs and multiplied by the int16
// multipliers in scale, as eight int32.
STRATA_AI __m256i sub_block(__m256i grid, const int8_t* q8, uint32_t sign4, __m256i scale) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(grid, apply_signs(load256(q8), sign4)), scale);
}

// --- The five formats ------------------------------------------------------------------------
// Each kernel: prepare(block, prep) fills its stack record; sum(block, prep, q8) is the block sum.

struct Iq2xxsKernel {
    using Block = block_iq2_xxs;
    struct alignas(32) Prep {
        uint32_t sign4[8], scale[8];
    };
    STRATA_AI static void prepare(const Block& b, Prep& p) {
        const __m256i lo = load256(b.qs);       // dwords a0 b0 a1 b1 a2 b2 a3 b3: sub-blocks 0-3
        const __m256i hi = load256(b.qs + 16);  // sub-blocks 4-7
        const __m256i w = _mm256_permute4x64_epi64(  // the words b_s in sub-block order
            _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(lo), _mm256_castsi256_ps(hi), 0xdd)), 0xd8);
        store256(p.sign4, add_parity_bit(spread_packed7(w)));
        store256(p.scale, odd_pairs(_mm256_srli_epi32(w, 28)));
    }
    STRATA_AI static int32_t sum(const Block& b, const Prep& p, const int8_t* q8) {
        const auto* idx = reinterpret_cast<const uint8_t*>(b.qs);
        __m256i acc = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) {
            const uint8_t* g = idx + 8 * s;
            const __m256i grid = grid4x64(kIq2xxsGrid, g[0], g[1], g[2], g[3]);
            acc = _mm256_add_epi32(acc, sub_block(grid, q8 + 32 * s, p.sign4[s], _mm256_set1_epi32(int(p.scale[s]))));
        }
        return hsum_epi32(acc);
    }
};

struct Iq2xsKernel {
    using Block = block_iq2_xs;
    struct alignas(32) Prep {
        uint16_t idx[32];
        uint32_t sign4[8];
    };
    STRATA_AI static void prepare(const Block& b, Prep& p) {
        const __m256i q0 = load256(b.qs);       // groups 0-15
        const __m256i q1 = load256(b.qs + 16);  // groups 16-31
        const __m256i m511 = _mm256_set1_epi16(511);
        store256(p.idx, _mm256_and_si256(q0, m511));
        store256(p.idx + 16, _mm256_and_si256(q1, m511));
        // The 7-bit sign indices as bytes; packus interleaves the inputs' lanes, vpermq restores order.
        const __m256i sign7 =
            _mm256_permute4x64_epi64(_mm256_packus_epi16(_mm256_srli_epi16(q0, 9), _mm256_srli_epi16(q1, 9)), 0xd8);
        store256(p.sign4, add_parity_bit(sign7));
    }
    STRATA_AI static int32_t sum(const Block& b, const Prep& p, const int8_t* q8) {
        const __m256i scales16 = half_scales(b.scales);
        __m256i acc = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) {
            const uint16_t* g = p.idx + 4 * s;
            const __m256i grid = grid4x64(kIq2xsGrid, g[0], g[1], g[2], g[3]);
            acc = _mm256_add_epi32(acc, sub_block(grid, q8 + 32 * s, p.sign4[s], half_scale(scales16, s)));
        }
        return hsum_epi32(acc);
    }
};

struct Iq2sKernel {
    using Block = block_iq2_s;
    struct alignas(32) Prep {
        uint16_t idx[32];
    };
    STRATA_AI static void prepare(const Block& b, Prep& p) {
        // index of group g = 4s + l: qs[g] | bits 2l..2l+1 of qh[s] at bits 8-9. qh[s] is copied into
        // the words of its four groups and multiplied by 2^(8-2l) to move its bits there.
        const __m256i qh = _mm256_set1_epi64x(static_cast<long long>(load_u64(b.qh)));
        const __m256i rep0 = _mm256_setr_epi8(0, -128, 0, -128, 0, -128, 0, -128, 1, -128, 1, -128, 1, -128, 1, -128,  //
                                              2, -128, 2, -128, 2, -128, 2, -128, 3, -128, 3, -128, 3, -128, 3, -128);
        const __m256i rep1 = _mm256_add_epi8(rep0, _mm256_set1_epi16(4));
        const __m256i mul = _mm256_setr_epi16(256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4);
        const __m256i m300 = _mm256_set1_epi16(0x300);
        const __m256i lo0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs)));
        const __m256i lo1 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16)));
        const __m256i hi0 = _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh, rep0), mul), m300);
        const __m256i hi1 = _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh, rep1), mul), m300);
        store256(p.idx, _mm256_or_si256(lo0, hi0));
        store256(p.idx + 16, _mm256_or_si256(lo1, hi1));
    }
    STRATA_AI static int32_t sum(const Block& b, const Prep& p, const int8_t* q8) {
        const __m256i scales16 = half_scales(b.scales);
        const uint8_t* signs = b.qs + kQK_K / 8;
        __m256i acc = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) {
            const uint16_t* g = p.idx + 4 * s;
            const __m256i grid = grid4x64(kIq2sGrid, g[0], g[1], g[2], g[3]);
            acc = _mm256_add_epi32(acc, sub_block(grid, q8 + 32 * s, load_u32(signs + 4 * s), half_scale(scales16, s)));
        }
        return hsum_epi32(acc);
    }
};

struct Iq3xxsKernel {
    using Block = block_iq3_xxs;
    using Prep = Iq2xxsKernel::Prep;
    STRATA_AI static void prepare(const Block& b, Prep& p) {
        const __m256i w = load256(b.qs + kQK_K / 4);
        store256(p.sign4, add_parity_bit(spread_packed7(w)));
        store256(p.scale, odd_pairs(_mm256_srli_epi32(w, 28)));
    }
    STRATA_AI static int32_t sum(const Block& b, const Prep& p, const int8_t* q8) {
        __m256i acc = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) {
            const __m256i grid = grid8x32(kIq3xxsGrid, b.qs + 8 * s);
            acc = _mm256_add_epi32(acc, sub_block(grid, q8 + 32 * s, p.sign4[s], _mm256_set1_epi32(int(p.scale[s]))));
        }
        return hsum_epi32(acc);
    }
};

struct Iq3sKernel {
    using Block = block_iq3_s;
    struct alignas(32) Prep {
        uint16_t idx[64];
        uint32_t scale[8];
    };
    STRATA_AI static void prepare(const Block& b, Prep& p) {
        // index of entry k of sub-block s: qs[8s + k] | bit k of qh[s] at bit 8. Vector j holds
        // sub-blocks 2j (low lane) and 2j + 1 (high lane); qh[s] is copied into its eight words and
        // multiplied by 2^(8-k).
        const __m256i qh = _mm256_set1_epi64x(static_cast<long long>(load_u64(b.qh)));
        const __m256i rep = _mm256_setr_epi8(0, -128, 0, -128, 0, -128, 0, -128, 0, -128, 0, -128, 0, -128, 0, -128,  //
                                             1, -128, 1, -128, 1, -128, 1, -128, 1, -128, 1, -128, 1, -128, 1, -128);
        const __m256i mul = _mm256_setr_epi16(256, 128, 64, 32, 16, 8, 4, 2, 256, 128, 64, 32, 16, 8, 4, 2);
        const __m256i m100 = _mm256_set1_epi16(0x100);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
            const __m256i low = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * j)));
            const __m256i sel = _mm256_add_epi8(rep, _mm256_set1_epi16(int16_t(2 * j)));
            const __m256i high = _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh, sel), mul), m100);
            store256(p.idx + 16 * j, _mm256_or_si256(low, high));
        }
        // ls of sub-block s is nibble s % 2 of scales[s / 2].
        const __m128i ls = split_nibbles(_mm_cvtsi32_si128(int(load_u32(b.scales))));
        store256(p.scale, odd_pairs(_mm256_cvtepu8_epi32(ls)));
    }
    STRATA_AI static int32_t sum(const Block& b, const Prep& p, const int8_t* q8) {
        __m256i acc = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) {
            const __m256i grid = grid8x32(kIq3sGrid, p.idx + 8 * s);
            acc = _mm256_add_epi32(acc, sub_block(grid, q8 + 32 * s, load_u32(b.signs + 4 * s),
                                                  _mm256_set1_epi32(int(p.scale[s]))));
        }
        return hsum_epi32(acc);
    }
};

// The row loop: superblock i + 1 is prepared before superblock i is summed (two stack records).
// The empty asm tells the compiler the record may have changed, so the sub-block loop reads it
// back with broadcast loads (pure load uops) instead of extracting lanes with shuffles.
template <typename Kernel>
float dot_rows(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const typename Kernel::Block*>(w);
    const auto* yb = static_cast<const block_q8_K*>(x);
    const int64_t nb = n / kQK_K;
    typename Kernel::Prep prep[2];
    if (nb > 0) Kernel::prepare(wb[0], prep[0]);
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        if (i + 1 < nb) Kernel::prepare(wb[i + 1], prep[(i + 1) & 1]);
        asm("" : "+m"(prep));
        const int32_t sum = Kernel::sum(wb[i], prep[i & 1], yb[i].qs);
        // acc + (f16(d) * d_q8) * float(sum), each operation rounded, as the scalar kernel.
        const __m128 d = _mm_mul_ss(_mm_cvtph_ps(_mm_cvtsi32_si128(wb[i].d)), _mm_set_ss(yb[i].d));
        acc = _mm_add_ss(acc, _mm_mul_ss(d, _mm_cvtsi32_ss(_mm_setzero_ps(), sum)));
    }
    return _mm_cvtss_f32(acc);
}

#undef STRATA_AI

}  // namespace

float vec_dot_iq2_xxs_q8_K_avx2(int64_t n, const void* w, const void* x) {
    return 0.125f * dot_rows<Iq2xxsKernel>(n, w, x);
}

float vec_dot_iq2_xs_q8_K_avx2(int64_t n, const void* w, const void* x) {
    return 0.125f * dot_rows<Iq2xsKernel>(n, w, x);
}

float vec_dot_iq2_s_q8_K_avx2(int64_t n, const void* w, const void* x) {
    return 0.125f * dot_rows<Iq2sKernel>(n, w, x);
}

float vec_dot_iq3_xxs_q8_K_avx2(int64_t n, const void* w, const void* x) {
    return 0.25f * dot_rows<Iq3xxsKernel>(n, w, x);
}

float vec_dot_iq3_s_q8_K_avx2(int64_t n, const void* w, const void* x) {
    return dot_rows<Iq3sKernel>(n, w, x);
}

}  // namespace strata::quant

#endif  // __x86_64__
