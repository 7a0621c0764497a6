// SentencePiece-style tokenization as llama.cpp does it: start from single UTF-8
// characters, repeatedly merge the adjacent pair whose joined text is the vocabulary piece
// with the highest score (leftmost first on ties), and spell every remaining piece that is
// not in the vocabulary as byte tokens.
#include <queue>
#include <string>

#include "token/encoders.hpp"
#include "token/merge.hpp"
#include "token/unicode.hpp"
#include "util/error.hpp"

namespace strata::token {

namespace {

// llama.cpp cuts SentencePiece input into characters by the lead byte's high four bits alone
// (unicode_len_utf8): 0xC_/0xD_ two bytes, 0xE_ three, 0xF_ four, anything else one, whatever
// follows; invalid bytes then fall back to byte tokens with their neighbours.
size_t llama_char_length(uint8_t lead) {
    const uint8_t high = lead >> 4;
    return high < 0xC ? 1 : high < 0xE ? 2 : high == 0xE ? 3 : 4;
}

struct Bigram {
    int left, right;
    float score;
    size_t len;  // joined length when queued; a different length later means it is stale
};

struct Lower {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    std::vector<Symbol> sym = split_symbols(
        text.size(), [&](size_t pos) { return std::min(llama_char_length(uint8_t(text[pos])), text.size() - pos); });
    if (sym.empty()) return;

    std::priority_queue<Bigram, std::vector<Bigram>, Lower> queue;
    auto try_pair = [&](int l, int r) {
        if (l < 0 || r < 0) return;
        const size_t len = sym[size_t(l)].len + sym[size_t(r)].len;
        const int32_t id = vocab.find(text.substr(sym[size_t(l)].pos, len));
        if (id < 0) return;
        queue.push({l, r, vocab.score[size_t(id)], len});
    };
    merge_symbols(sym, queue, try_pair);

    for (int i = 0; i >= 0; i = sym[size_t(i)].next) {
        const std::string_view piece = text.substr(sym[size_t(i)].pos, sym[size_t(i)].len);
        const int32_t id = vocab.find(piece);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        // Byte fallback; a vocabulary without byte tokens spells the piece as one <unk>,
        // as SentencePiece does.
        bool have_bytes = true;
        for (char c : piece) have_bytes = have_bytes && vocab.byte_token[uint8_t(c)] >= 0;
        if (have_bytes) {
            for (char c : piece) out.push_back(vocab.byte_token[uint8_t(c)]);
        } else if (vocab.unk >= 0) {
            out.push_back(vocab.unk);
        } else {
            fail(Status::unsupported, "vocabulary has neither byte tokens nor an unknown token to spell '" +
                                          std::string(piece) + "'");
        }
    }
}

}  // namespace strata::token
