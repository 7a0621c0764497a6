// Internals of token/regex.hpp: the character classes and the compiled program the matcher runs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strata::token::regex_detail {

struct CodeRange {
    uint32_t first, last;
};

// A set of code points: sorted disjoint ranges, plus property items (categories, llama.cpp's
// whitespace, Han, negated ranges), optionally case-insensitive and negated as a whole. The
// Basic Multilingual Plane is precomputed into a bitmap; other code points are tested slowly.
class CharClass {
public:
    enum class ItemKind : uint8_t { categories, whitespace, han, ranges };
    struct Item {
        ItemKind kind;
        bool negated;
        uint32_t categories;             // bit per Category, for ItemKind::categories
        std::vector<CodeRange> ranges;   // for ItemKind::ranges
    };

    void add_range(uint32_t first, uint32_t last) { ranges_.push_back({first, last}); }
    void add_item(Item item) { items_.push_back(std::move(item)); }
    void set_negated(bool negated) { negated_ = negated; }
    void set_case_insensitive(bool on) { case_insensitive_ = on; }
    // Sorts and merges the ranges and fills the bitmap; call once, after the last add.
    void finish();

    bool contains(uint32_t cp) const {
        if (cp < kBitmapSize) return (bitmap_[cp >> 6] >> (cp & 63)) & 1u;
        return contains_slow(cp);
    }
    bool contains_slow(uint32_t cp) const;
    // The Basic Multilingual Plane as 1024 words of bits (after finish()).
    const std::vector<uint64_t>& bitmap() const { return bitmap_; }

private:
    static constexpr uint32_t kBitmapSize = 0x10000;
    bool contains_uncased(uint32_t cp) const;

    std::vector<CodeRange> ranges_;
    std::vector<Item> items_;
    bool negated_ = false;
    bool case_insensitive_ = false;
    std::vector<uint64_t> bitmap_;
};

// Consuming instructions (literal, literal_fold, char_class) continue at x.
enum class Op : uint8_t {
    literal,        // the code point arg
    literal_fold,   // a code point whose to_lower() is arg
    char_class,     // classes[arg]
    split,          // continue at x, on failure at y; arg is the split's memo index, or kNoMemo
    jump,           // continue at x
    line_start,     // position 0 of the segment
    line_end,       // the end of the segment
    word_boundary,  // ASCII \w on one side only
    not_word_boundary,
    lookahead,      // lookaheads[arg] holds here (negated when y != 0)
    fail,           // an iteration of a loop that consumed nothing (ECMAScript refuses it)
    match,
};

// A split that only the start of a match reaches (never after consuming) is tried once per
// start position anyway and needs no memo.
constexpr uint32_t kNoMemo = UINT32_MAX;

constexpr uint32_t kAnyFirst = UINT32_MAX;

struct Inst {
    Op op;
    uint32_t arg = 0;
    uint32_t x = 0;
    uint32_t y = 0;
    // For a split of the main code: Program::first_sets[x_first] holds the Basic Multilingual
    // Plane code points branch x can begin with (kAnyFirst: any, or it can match empty); the
    // matcher skips a branch that cannot begin with the next code point.
    uint32_t x_first = kAnyFirst;
    uint32_t y_first = kAnyFirst;
};

// The code points a match can begin with: a bitmap of the Basic Multilingual Plane, and the
// first consuming instructions to test the other planes with.
struct FirstChars {
    std::vector<uint64_t> bitmap;   // empty: any code point can begin a match
    std::vector<Inst> starts;
};

// One instruction list: the main pattern, or the body of a lookahead.
struct Code {
    std::vector<Inst> insts;   // starts at 0, ends in (at least one) Op::match
    uint32_t splits = 0;       // memo indices of Op::split are 0..splits-1 (or kNoMemo)
    // Only consuming instructions, then the match: a lookahead body tested directly.
    bool straight = false;
};

struct Program {
    std::string pattern;
    Code main;
    std::vector<Code> lookaheads;  // bodies, each matched anywhere from the position on
    std::vector<CharClass> classes;
    // Code points that can begin a match of main, to skip start positions quickly; empty when
    // main can match the empty string and every position must be tried.
    FirstChars first_chars;
    std::vector<std::vector<uint64_t>> first_sets;  // see Inst::x_first
};

// Whether a consuming instruction (literal, literal_fold, char_class) accepts cp.
bool accepts(const Program& program, const Inst& inst, uint32_t cp);

// Parses and compiles; throws strata::Error (invalid_argument / unsupported) naming the offset.
std::unique_ptr<Program> compile_program(std::string_view pattern_utf8);

}  // namespace strata::token::regex_detail
