// The matcher of token/regex.hpp: a backtracking search over the compiled program that is linear
// in the segment. Every split instruction, tried at a position, is remembered; reaching it again
// there fails at once, because without captures or backreferences its outcome cannot differ
// (and any way it could have led to a match was tried first, in priority order). The memory is
// kept across the start positions of a search and across the successive searches of one segment
// (see Matcher::forget_at), so a segment costs O(length x splits) in all. Lookaheads are
// position predicates, computed for the whole segment at once by dynamic programming from its
// end (Matcher::compute_lookahead).
#include "token/regex.hpp"

#include <string>

#include "token/regex_program.hpp"
#include "token/unicode.hpp"
#include "util/error.hpp"

namespace strata::token {

using regex_detail::Code;
using regex_detail::Inst;
using regex_detail::Op;
using regex_detail::Program;

namespace {

bool is_ascii_word(uint32_t cp) {
    return (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z') || cp == '_';
}

// One bit per (split, position), allocated in pages of positions as the search reaches them,
// and handed back once every later search starts past them.
class SplitMemo {
public:
    static constexpr size_t kPagePositions = 64;

    void reset(size_t positions, uint32_t splits) {
        for (auto& page : pages_)
            if (page) release(page);
        splits_ = splits;
        words_per_page_ = (size_t(splits) * kPagePositions + 63) / 64;
        pages_.assign(positions / kPagePositions + 1, nullptr);
        first_live_page_ = 0;
    }

    // Whether (split, pos) was tried before; marks it tried.
    bool test_and_set(uint32_t split, size_t pos) {
        uint64_t*& page = pages_[pos / kPagePositions];
        if (!page) page = acquire();
        const size_t bit = (pos % kPagePositions) * splits_ + split;
        const uint64_t mask = uint64_t(1) << (bit % 64);
        uint64_t& word = page[bit / 64];
        const bool was = (word & mask) != 0;
        word |= mask;
        return was;
    }

    void clear_position(size_t pos) {
        uint64_t* page = pages_[pos / kPagePositions];
        if (!page) return;
        const size_t first = (pos % kPagePositions) * splits_;
        for (size_t bit = first; bit < first + splits_; ++bit) page[bit / 64] &= ~(uint64_t(1) << (bit % 64));
    }

    // No search will look at positions before pos again.
    void drop_before(size_t pos) {
        for (; first_live_page_ < pos / kPagePositions; ++first_live_page_)
            if (pages_[first_live_page_]) release(pages_[first_live_page_]);
    }

private:
    uint64_t* acquire() {
        if (free_.empty()) {
            storage_.push_back(std::make_unique<uint64_t[]>(words_per_page_));
            return storage_.back().get();
        }
        uint64_t* page = free_.back();
        free_.pop_back();
        return page;
    }
    void release(uint64_t*& page) {
        std::fill(page, page + words_per_page_, 0);
        free_.push_back(page);
        page = nullptr;
    }

    uint32_t splits_ = 0;
    size_t words_per_page_ = 0;
    std::vector<uint64_t*> pages_;
    size_t first_live_page_ = 0;
    std::vector<std::unique_ptr<uint64_t[]>> storage_;
    std::vector<uint64_t*> free_;
};

class Matcher {
public:
    explicit Matcher(const Program& program) : p_(program) {}

    void reset(std::span<const uint32_t> cps) {
        cps_ = cps;
        n_ = cps.size();
        memo_.reset(n_ + 1, p_.main.splits);
        lookahead_.assign(p_.lookaheads.size(), {});
    }

    std::optional<Regex::Match> search(size_t from) {
        memo_.drop_before(from);
        const auto& bitmap = p_.first_chars.bitmap;
        for (size_t s = from; s <= n_; ++s) {
            if (!bitmap.empty()) {  // a match needs a first character it can begin with
                if (s == n_) break;
                const uint32_t cp = cps_[s];
                if (cp < 0x10000 ? !((bitmap[cp >> 6] >> (cp & 63)) & 1u) : !may_begin(cp)) continue;
            }
            if (const auto end = run(s, false)) return Regex::Match{s, *end - s};
        }
        return std::nullopt;
    }

    // A match beginning exactly at start, not empty (std::regex_iterator's retry after an
    // empty match).
    std::optional<Regex::Match> non_empty_at(size_t start) {
        memo_.drop_before(start);
        if (const auto end = run(start, true)) return Regex::Match{start, *end - start};
        return std::nullopt;
    }

    // After a match ending at pos, the splits tried at pos may have been on the path to that
    // match, so they do not stand for failures there: forget them. (Splits tried beyond pos
    // could only reach a match through that path, which later searches, starting at or after
    // pos, never take; so they are real failures and stay remembered.)
    void forget_at(size_t pos) { memo_.clear_position(pos); }

private:
    bool may_begin(uint32_t cp) const {
        for (const Inst& in : p_.first_chars.starts)
            if (regex_detail::accepts(p_, in, cp)) return true;
        return false;
    }

    // Whether a branch whose first code points are first_sets[set] can match at pos.
    bool may_take(uint32_t set, size_t pos) const {
        if (set == regex_detail::kAnyFirst) return true;
        if (pos == n_) return false;  // it must consume
        const uint32_t cp = cps_[pos];
        if (cp >= 0x10000) return true;
        return (p_.first_sets[set][cp >> 6] >> (cp & 63)) & 1u;
    }

    bool word_at(size_t pos) const { return pos < n_ && is_ascii_word(cps_[pos]); }

    bool assertion_holds(Op op, size_t pos) const {
        switch (op) {
            case Op::line_start: return pos == 0;
            case Op::line_end: return pos == n_;
            case Op::word_boundary: return (pos > 0 && word_at(pos - 1)) != word_at(pos);
            case Op::not_word_boundary: return (pos > 0 && word_at(pos - 1)) == word_at(pos);
            default: return false;
        }
    }

    bool lookahead_holds(uint32_t index, size_t pos) {
        const Code& code = p_.lookaheads[index];
        if (code.straight) {  // e.g. (?!\S): test the few code points directly
            const size_t length = code.insts.size() - 1;
            if (length > n_ - pos) return false;
            for (size_t k = 0; k < length; ++k)
                if (!regex_detail::accepts(p_, code.insts[k], cps_[pos + k])) return false;
            return true;
        }
        if (lookahead_[index].empty()) compute_lookahead(index);
        return lookahead_[index][pos] != 0;
    }

    // For every position, whether the lookahead body matches some text starting there: a
    // column of "this instruction can reach the match" flags per position, from the end back.
    void compute_lookahead(uint32_t index) {
        const Code& code = p_.lookaheads[index];
        for (const Inst& in : code.insts)  // inner lookaheads first
            if (in.op == Op::lookahead && !p_.lookaheads[in.arg].straight && lookahead_[in.arg].empty())
                compute_lookahead(in.arg);
        const size_t m = code.insts.size();
        std::vector<std::vector<uint32_t>> preds(m);  // predecessors over non-consuming edges
        for (uint32_t pc = 0; pc < m; ++pc) {
            const Inst& in = code.insts[pc];
            switch (in.op) {
                case Op::split: preds[in.x].push_back(pc); preds[in.y].push_back(pc); break;
                case Op::jump: preds[in.x].push_back(pc); break;
                case Op::line_start: case Op::line_end: case Op::word_boundary: case Op::not_word_boundary:
                case Op::lookahead: preds[pc + 1].push_back(pc); break;
                default: break;
            }
        }
        std::vector<uint8_t> result(n_ + 1, 0), next(m, 0), cur(m, 0);
        std::vector<uint32_t> work;
        for (size_t pos = n_ + 1; pos-- > 0;) {
            work.clear();
            for (uint32_t pc = 0; pc < m; ++pc) {
                const Inst& in = code.insts[pc];
                bool can = false;
                if (in.op == Op::match) can = true;
                else if (in.op == Op::literal || in.op == Op::literal_fold || in.op == Op::char_class)
                    can = pos < n_ && next[in.x] && regex_detail::accepts(p_, in, cps_[pos]);
                cur[pc] = can;
                if (can) work.push_back(pc);
            }
            while (!work.empty()) {
                const uint32_t pc = work.back();
                work.pop_back();
                for (uint32_t from : preds[pc]) {
                    if (cur[from]) continue;
                    const Inst& in = code.insts[from];
                    bool passes = true;
                    if (in.op == Op::lookahead) passes = lookahead_holds(in.arg, pos) != (in.y != 0);
                    else if (in.op != Op::split && in.op != Op::jump) passes = assertion_holds(in.op, pos);
                    if (passes) {
                        cur[from] = 1;
                        work.push_back(from);
                    }
                }
            }
            result[pos] = cur[0];
            std::swap(cur, next);
        }
        lookahead_[index] = std::move(result);
    }

    // The end of the first match (in priority order) that begins at start.
    std::optional<size_t> run(size_t start, bool not_empty) {
        const Inst* insts = p_.main.insts.data();
        stack_.clear();
        stack_.push_back({0, start});
        while (!stack_.empty()) {
            uint32_t pc = stack_.back().pc;
            size_t pos = stack_.back().pos;
            stack_.pop_back();
            for (bool alive = true; alive;) {
                const Inst& in = insts[pc];
                switch (in.op) {
                    case Op::literal:
                        alive = pos < n_ && cps_[pos] == in.arg;
                        pc = in.x, ++pos;
                        break;
                    case Op::literal_fold:
                        alive = pos < n_ && to_lower(cps_[pos]) == in.arg;
                        pc = in.x, ++pos;
                        break;
                    case Op::char_class:
                        alive = pos < n_ && p_.classes[in.arg].contains(cps_[pos]);
                        pc = in.x, ++pos;
                        break;
                    case Op::split: {
                        if (in.arg != regex_detail::kNoMemo && memo_.test_and_set(in.arg, pos)) {
                            alive = false;
                            break;
                        }
                        const bool try_x = may_take(in.x_first, pos), try_y = may_take(in.y_first, pos);
                        if (try_y && try_x) stack_.push_back({in.y, pos});
                        if (try_x) pc = in.x;
                        else if (try_y) pc = in.y;
                        else alive = false;
                        break;
                    }
                    case Op::jump: pc = in.x; break;
                    case Op::lookahead:
                        alive = lookahead_holds(in.arg, pos) != (in.y != 0);
                        ++pc;
                        break;
                    case Op::match:
                        if (!(not_empty && pos == start)) return pos;
                        alive = false;
                        break;
                    case Op::fail: alive = false; break;
                    default:
                        alive = assertion_holds(in.op, pos);
                        ++pc;
                        break;
                }
            }
        }
        return std::nullopt;
    }

    struct Thread {
        uint32_t pc;
        size_t pos;
    };

    const Program& p_;
    std::span<const uint32_t> cps_;
    size_t n_ = 0;
    SplitMemo memo_;
    std::vector<std::vector<uint8_t>> lookahead_;  // per lookahead: holds at each position (empty: not computed)
    std::vector<Thread> stack_;
};

}  // namespace

Regex::Regex(std::unique_ptr<regex_detail::Program> program) : program_(std::move(program)) {}
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

Regex Regex::compile(std::string_view pattern_utf8) { return Regex(regex_detail::compile_program(pattern_utf8)); }

std::string_view Regex::pattern() const { return program_->pattern; }

std::optional<Regex::Match> Regex::search(std::span<const uint32_t> cps, size_t from) const {
    if (from > cps.size())
        fail(Status::invalid_argument, "Regex::search: start " + std::to_string(from) + " is past the text's " +
                                           std::to_string(cps.size()) + " code points");
    Matcher matcher(*program_);
    matcher.reset(cps);
    return matcher.search(from);
}

std::vector<size_t> regex_split(const Regex& re, std::span<const uint32_t> cps, const std::vector<size_t>& offsets) {
    size_t total = 0;
    for (size_t len : offsets) {
        total += len;
        if (total < len || total > cps.size()) break;
    }
    if (total != cps.size())
        fail(Status::invalid_argument, "regex_split: the segment lengths do not add up to the text's " +
                                           std::to_string(cps.size()) + " code points");
    std::vector<size_t> out;
    out.reserve(offsets.size());
    Matcher matcher(*re.program_);
    size_t base = 0;
    for (size_t len : offsets) {
        matcher.reset(cps.subspan(base, len));
        size_t emitted = 0;  // end of the last segment written, within this one
        std::optional<Regex::Match> m = matcher.search(0);
        while (m) {
            if (m->begin > emitted) out.push_back(m->begin - emitted);
            out.push_back(m->length);
            const size_t end = m->begin + m->length;
            emitted = end;
            matcher.forget_at(end);
            if (m->length > 0) {
                m = matcher.search(end);
                continue;
            }
            if (end == len) break;
            m = matcher.non_empty_at(end);  // as std::regex_iterator: no second empty match here
            if (!m) m = matcher.search(end + 1);
        }
        if (emitted < len) out.push_back(len - emitted);
        base += len;
    }
    return out;
}

}  // namespace strata::token
