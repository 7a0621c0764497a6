// A regular-expression engine over code points for the pre-tokenizer patterns that llama.cpp
// runs through std::regex (ECMAScript, leftmost-first), in time linear in the text for every
// pattern: the text is untrusted.
//
// Syntax: literals (any code point; the pattern is UTF-8); escapes \r \n \t \f \v \0 \\ and
// escaped punctuation; \s \S (llama.cpp's whitespace, token/unicode.hpp), \d \D \w \W \b \B
// (ASCII, as ECMAScript); \p{X} and \P{X} for X in L N P S M Z C, any two-letter general
// category (Lu, Ll, Nd, ...) and Han; '.' (anything but \n \r U+2028 U+2029); classes [...]
// with ranges of any code points, negation [^...], escapes and \p inside; groups (...) and
// (?:...) (no captures), (?i:...) (case-insensitive through the simple lowercase mapping);
// alternation; quantifiers ? * + {n} {n,} {n,m}, greedy or lazy (a trailing ?); lookaheads
// (?=...) (?!...); anchors ^ $ (the ends of the searched segment). Backreferences,
// lookbehind, possessive quantifiers, class set operations (&& --) and named groups are
// refused with Status::unsupported; a malformed pattern with Status::invalid_argument.
//
// The \p classes are the TRUE general categories of Unicode 15.1 (\p{C} includes Cn, as in
// Unicode; \p{Han} is llama.cpp's unicode_cpt_is_han ranges). llama.cpp runs patterns with \p
// through std::regex on a "collapsed" text in which \p{Lu}, \p{Ll}, ... all mean \p{L};
// callers that must reproduce that write \p{L}.
//
// Matching follows the ECMAScript specification (checked against V8 on random patterns). It
// differs from libstdc++'s std::regex only where that deviates from the specification, in
// corners no pre-tokenizer pattern reaches: a loop whose body can match empty (ECMAScript
// refuses an iteration that consumes nothing; libstdc++ accepts some), '^' and \b inside a
// lookahead (libstdc++ treats the lookahead's start as the text's start on the first search),
// and \b at the retry after an empty first match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace strata::token {

namespace regex_detail {
struct Program;
}

class Regex {
public:
    // Status::invalid_argument naming the offset (in bytes) and the problem on a bad pattern;
    // Status::unsupported naming the construct for the syntax this engine does not have.
    static Regex compile(std::string_view pattern_utf8);

    struct Match {
        size_t begin, length;
    };

    // The leftmost match starting at or after `from` in cps (the first alternative that matches
    // there, as ECMAScript does). cps is one segment: '^' and '$' match at its ends only, and a
    // lookahead sees nothing beyond it. Linear in cps.size() - from.
    std::optional<Match> search(std::span<const uint32_t> cps, size_t from) const;

    // The pattern as given to compile().
    std::string_view pattern() const;

    Regex(Regex&&) noexcept;
    Regex& operator=(Regex&&) noexcept;
    ~Regex();

private:
    explicit Regex(std::unique_ptr<regex_detail::Program> program);
    friend std::vector<size_t> regex_split(const Regex&, std::span<const uint32_t>, const std::vector<size_t>&);

    std::unique_ptr<regex_detail::Program> program_;
};

// llama.cpp's unicode_regex_split_stl: `offsets` are consecutive segment lengths covering cps;
// within each segment, successive non-overlapping matches are found as std::regex_iterator
// does (after an empty match the next search must not be an empty match at the same place);
// the text before a match (when non-empty) and the match become segments, then the rest of
// the segment. Returns the new segment lengths (an empty match gives a 0-length segment, as in
// llama.cpp). Status::invalid_argument when the offsets do not sum to cps.size().
std::vector<size_t> regex_split(const Regex& re, std::span<const uint32_t> cps, const std::vector<size_t>& offsets);

}  // namespace strata::token
