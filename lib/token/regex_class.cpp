// Character classes of token/regex.hpp: ranges and Unicode property items, with case folding.
#include <algorithm>
#include <utility>

#include "token/regex_program.hpp"
#include "token/unicode.hpp"

namespace strata::token::regex_detail {

namespace {

bool in_ranges(const std::vector<CodeRange>& ranges, uint32_t cp) {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), cp,
                               [](uint32_t v, const CodeRange& r) { return v < r.first; });
    return it != ranges.begin() && cp <= std::prev(it)->last;
}

bool item_holds(const CharClass::Item& item, uint32_t cp, CodePointFlags f) {
    bool in = false;
    switch (item.kind) {
        case CharClass::ItemKind::categories: in = (item.categories >> unsigned(f.category())) & 1u; break;
        case CharClass::ItemKind::whitespace: in = f.whitespace(); break;
        case CharClass::ItemKind::han: in = f.han(); break;
        case CharClass::ItemKind::ranges: in = in_ranges(item.ranges, cp); break;
    }
    return in != item.negated;
}

// (lowercase, code point) for every code point whose simple lowercase differs from it, sorted:
// the code points a case-insensitive match of a lowercase letter also accepts.
const std::vector<std::pair<uint32_t, uint32_t>>& uppercase_variants() {
    static const std::vector<std::pair<uint32_t, uint32_t>> table = [] {
        std::vector<std::pair<uint32_t, uint32_t>> t;
        for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp)
            if (flags(cp).has_lowercase() || (cp >= 'A' && cp <= 'Z')) t.push_back({to_lower(cp), cp});
        std::sort(t.begin(), t.end());
        return t;
    }();
    return table;
}

}  // namespace

bool CharClass::contains_uncased(uint32_t cp) const {
    if (in_ranges(ranges_, cp)) return true;
    if (items_.empty()) return false;
    const CodePointFlags f = flags(cp);
    for (const Item& item : items_)
        if (item_holds(item, cp, f)) return true;
    return false;
}

bool CharClass::contains_slow(uint32_t cp) const {
    bool in = contains_uncased(cp);
    if (!in && case_insensitive_) {
        const uint32_t lower = to_lower(cp);
        in = lower != cp && contains_uncased(lower);
        const auto& variants = uppercase_variants();
        for (auto it = std::lower_bound(variants.begin(), variants.end(), std::pair<uint32_t, uint32_t>{lower, 0});
             !in && it != variants.end() && it->first == lower; ++it)
            in = it->second != cp && contains_uncased(it->second);
    }
    return in != negated_;
}

void CharClass::finish() {
    std::sort(ranges_.begin(), ranges_.end(), [](const CodeRange& a, const CodeRange& b) { return a.first < b.first; });
    std::vector<CodeRange> merged;
    for (const CodeRange& r : ranges_) {
        if (!merged.empty() && r.first <= merged.back().last + 1)
            merged.back().last = std::max(merged.back().last, r.last);
        else
            merged.push_back(r);
    }
    ranges_ = std::move(merged);

    bitmap_.assign(kBitmapSize / 64, 0);
    const auto set_bit = [&](uint32_t cp) { bitmap_[cp >> 6] |= uint64_t(1) << (cp & 63); };
    if (!case_insensitive_ && items_.empty()) {  // the common case, without a test per code point
        for (const CodeRange& r : ranges_)
            for (uint32_t cp = r.first; cp <= std::min(r.last, kBitmapSize - 1); ++cp) set_bit(cp);
        if (negated_)
            for (uint64_t& word : bitmap_) word = ~word;
        return;
    }
    for (uint32_t cp = 0; cp < kBitmapSize; ++cp)
        if (contains_slow(cp)) set_bit(cp);
}

}  // namespace strata::token::regex_detail
