// The pair-merging loop both tokenizers share: a doubly linked list of symbols (pieces of the
// input) and a priority queue of candidate merges of adjacent symbols. SPM ranks candidates by
// vocabulary score, BPE by merge rank; everything else is the same.
#pragma once

#include <cstddef>
#include <queue>
#include <vector>

namespace strata::token {

struct Symbol {
    size_t pos, len;  // bytes of the text; len 0 once merged into its left neighbour
    int prev, next;   // -1 at the ends
};

// Symbols of consecutive characters: char_len(pos) gives the byte length of the character at pos.
template <typename CharLen>
std::vector<Symbol> split_symbols(size_t text_size, CharLen&& char_len) {
    std::vector<Symbol> sym;
    for (size_t pos = 0; pos < text_size;) {
        const size_t len = char_len(pos);
        sym.push_back({pos, len, int(sym.size()) - 1, int(sym.size()) + 1});
        pos += len;
    }
    if (!sym.empty()) sym.back().next = -1;
    return sym;
}

// Candidate: {int left, right; ...; size_t len} where len is the joined length when queued (a
// different length later means the candidate is stale). try_pair(l, r) pushes the candidate
// for symbols l and r, if any, onto `queue`; it is called with l or r == -1 at the ends.
template <typename Candidate, typename Order, typename TryPair>
void merge_symbols(std::vector<Symbol>& sym, std::priority_queue<Candidate, std::vector<Candidate>, Order>& queue,
                   TryPair&& try_pair) {
    for (size_t i = 1; i < sym.size(); ++i) try_pair(int(i) - 1, int(i));
    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& l = sym[size_t(c.left)];
        Symbol& r = sym[size_t(c.right)];
        if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) sym[size_t(r.next)].prev = c.left;
        try_pair(l.prev, c.left);
        try_pair(c.left, l.next);
    }
}

}  // namespace strata::token
