// Byte-level BPE (GPT-2): cut the text into words with the pre-tokenizer, show each byte
// of a word as one character, then repeatedly merge the adjacent pair with the lowest
// merge rank (leftmost first on ties) and look the resulting pieces up.
#include <queue>
#include <span>
#include <string>
#include <unordered_map>

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

    // Each symbol's token id, looked up again when the symbol has grown by a merge: pairs of
    // tokens are ranked by id (no string built per candidate); pieces that are no token fall
    // back to the ranks by text (only vocabularies whose merges name non-tokens have those).
    std::vector<int32_t> sym_token(sym.size(), -1);
    std::vector<size_t> sym_token_len(sym.size(), 0);
    auto token_of = [&](int i) {
        const Symbol& s = sym[size_t(i)];
        if (sym_token_len[size_t(i)] != s.len) {
            sym_token[size_t(i)] = vocab.find(std::string_view(word).substr(s.pos, s.len));
            sym_token_len[size_t(i)] = s.len;
        }
        return sym_token[size_t(i)];
    };
    std::priority_queue<Merge, std::vector<Merge>, Later> queue;
    auto try_pair = [&](int l, int r) {
        if (l < 0 || r < 0) return;
        const Symbol& a = sym[size_t(l)];
        const Symbol& b = sym[size_t(r)];
        const int32_t ia = token_of(l), ib = token_of(r);
        if (ia >= 0 && ib >= 0) {
            auto it = vocab.merge_rank_by_id.find(merge_id_key(ia, ib));
            if (it != vocab.merge_rank_by_id.end()) queue.push({l, r, it->second, a.len + b.len});
            return;
        }
        if (vocab.merge_rank.empty()) return;
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
        // A piece the merges built but the vocabulary lacks: llama.cpp looks each of its bytes up
        // as a one-byte token and drops the bytes that are none (only a defective vocabulary,
        // one without all 256 byte characters, gets here).
        for (char c : piece)
            if (const int32_t id = vocab.find(std::string_view(&c, 1)); id >= 0) out.push_back(id);
    }
}

}  // namespace

void bpe_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    // As llama.cpp: the words are cut from the decoded code points and spelled again from them,
    // so a byte that is not valid UTF-8 becomes U+FFFD.
    std::vector<uint32_t> cps;
    decode_utf8_lenient(text, cps);
    std::string word, mapped;
    std::unordered_map<std::string, std::vector<int32_t>> cache;
    constexpr size_t kCachedWordBytes = 64, kCachedWords = 1 << 16;
    size_t begin = 0;
    for (size_t len : vocab.pre->split(cps)) {
        word.clear();
        encode_utf8(std::span<const uint32_t>(cps).subspan(begin, len), word);
        begin += len;
        mapped.clear();
        for (char c : word) append_utf8(mapped, byte_to_char(uint8_t(c)));
        // llama-bpe (llama.cpp's ignore_merges): a word that is a token is taken whole.
        if (vocab.pre->ignore_merges()) {
            if (const int32_t id = vocab.find(mapped); id >= 0) {
                out.push_back(id);
                continue;
            }
        }
        // Words repeat: their ids are kept for the rest of this text (short words only, bounded).
        if (auto it = cache.find(mapped); it != cache.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            continue;
        }
        const size_t first = out.size();
        encode_word(vocab, mapped, out);
        if (mapped.size() <= kCachedWordBytes && cache.size() < kCachedWords)
            cache.emplace(mapped, std::vector<int32_t>(out.begin() + std::ptrdiff_t(first), out.end()));
    }
}

}  // namespace strata::token
