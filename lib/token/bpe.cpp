// Byte-level BPE (GPT-2): cut the text into words with the pre-tokenizer, show each byte
// of a word as one character, then repeatedly merge the adjacent pair with the lowest
// merge rank (leftmost first on ties) and look the resulting pieces up.
#include <queue>
#include <string>

#include "token/encoders.hpp"
#include "token/merge.hpp"
#include "token/unicode.hpp"
#include "util/error.hpp"

namespace strata::token {

namespace {

struct Merge {
    int left, right;
    int32_t rank;
    size_t len;
};

struct Later {
    bool operator()(const Merge& a, const Merge& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

void encode_word(const Vocab& vocab, const std::string& word, std::vector<int32_t>& out) {
    std::vector<Symbol> sym = split_symbols(word.size(), [&](size_t pos) { return decode_utf8(word, pos).len; });
    if (sym.empty()) return;

    std::priority_queue<Merge, std::vector<Merge>, Later> queue;
    auto try_pair = [&](int l, int r) {
        if (l < 0 || r < 0) return;
        const Symbol& a = sym[size_t(l)];
        const Symbol& b = sym[size_t(r)];
        auto it = vocab.merge_rank.find(merge_key(std::string_view(word).substr(a.pos, a.len),
                                                  std::string_view(word).substr(b.pos, b.len)));
        if (it == vocab.merge_rank.end()) return;
        queue.push({l, r, it->second, a.len + b.len});
    };
    merge_symbols(sym, queue, try_pair);

    for (int i = 0; i >= 0; i = sym[size_t(i)].next) {
        const std::string_view piece = std::string_view(word).substr(sym[size_t(i)].pos, sym[size_t(i)].len);
        if (const int32_t id = vocab.find(piece); id >= 0) {
            out.push_back(id);
            continue;
        }
        // A piece the merges built but the vocabulary lacks: spell it one byte character at a time.
        for (size_t pos = 0; pos < piece.size();) {
            const size_t len = decode_utf8(piece, pos).len;
            const int32_t id = vocab.find(piece.substr(pos, len));
            if (id >= 0) {
                out.push_back(id);
            } else if (vocab.unk >= 0) {
                out.push_back(vocab.unk);
            } else {
                fail(Status::unsupported, "vocabulary has no token for the byte character '" +
                                              std::string(piece.substr(pos, len)) + "' and no unknown token");
            }
            pos += len;
        }
    }
}

}  // namespace

void bpe_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    std::string mapped;
    for (std::string_view word : pre_tokenize(vocab.pre, text)) {
        mapped.clear();
        for (char c : word) append_utf8(mapped, byte_to_char(uint8_t(c)));
        encode_word(vocab, mapped, out);
    }
}

}  // namespace strata::token
