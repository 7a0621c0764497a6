#include "token/pretokenize.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "token/pretokenize_patterns.hpp"
#include "token/regex.hpp"
#include "token/unicode.hpp"
#include "util/error.hpp"

namespace strata::token {

namespace {

using Splitter = PreTokenizer::Splitter;

// One byte of classes per code point; 0 stands for "outside the segment" (llama.cpp's
// OUT_OF_RANGE), so every code point inside has kIn set.
enum : uint8_t { kIn = 1, kLetter = 2, kNumber = 4, kMark = 8, kSpace = 16, kHan = 32 };

uint8_t classes(uint32_t cp) {
    const CodePointFlags f = flags(cp);
    return uint8_t(kIn | (f.letter() ? kLetter : 0) | (f.number() ? kNumber : 0) | (f.mark() ? kMark : 0) |
                   (f.whitespace() ? kSpace : 0) | (f.han() ? kHan : 0));
}

constexpr uint32_t kOutside = 0xFFFFFFFF;

bool is_cr_or_lf(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// One segment [begin, end) of the text being cut into words.
class Segment {
public:
    Segment(std::span<const uint32_t> cps, std::span<const uint8_t> cls, size_t begin, size_t end,
            std::vector<size_t>& out)
        : cps_(cps), cls_(cls), begin_(begin), end_(end), last_(begin), out_(out) {}

    size_t begin() const { return begin_; }
    size_t end() const { return end_; }
    uint32_t at(size_t i) const { return i >= begin_ && i < end_ ? cps_[i] : kOutside; }
    uint8_t cls(size_t i) const { return i >= begin_ && i < end_ ? cls_[i] : 0; }

    // Ends the current word at `end` (nothing when it would be empty); returns its length.
    size_t emit(size_t end) {
        const size_t n = end - last_;
        if (n) out_.push_back(n);
        last_ = end;
        return n;
    }

    // Length of a contraction ('s 't 'm 'd 're 've 'll) at i, or 0; ignore_case lowers the
    // letters first (llama.cpp's unicode_tolower).
    size_t contraction(size_t i, bool ignore_case) const {
        if (at(i) != '\'' || i + 1 >= end_) return 0;
        auto letter = [&](size_t k) { return ignore_case ? to_lower(at(k)) : at(k); };
        const uint32_t a = letter(i + 1);
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
        if (i + 2 >= end_) return 0;
        const uint32_t b = letter(i + 2);
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
        return 0;
    }

    // \p{N}{1,max}, repeated over a run of numbers: emits a word every `max` digits.
    void number_run(size_t& pos, size_t max) {
        size_t start = pos;
        while (cls(pos) & kNumber) {
            if (++pos - start >= max) {
                emit(pos);
                start = pos;
            }
        }
        emit(pos);
    }

    // ' ?X+' for the class "none of `not_in`": true when it matched (and emitted).
    // need_first_in_segment: llama-bpe's and qwen's hand-written rule checks the first code
    // point's presence rather than the class after the optional space (llama.cpp's code).
    bool optional_space_then_run(size_t& pos, uint8_t not_in, bool newlines_after, bool check_first) {
        const uint32_t c = at(pos);
        const uint8_t next = c == ' ' ? cls(pos + 1) : cls(pos);
        if ((next & not_in) || !(check_first ? cls(pos) : next)) return false;
        pos += c == ' ';
        while (cls(pos) && !(cls(pos) & not_in)) ++pos;
        if (newlines_after)
            while (is_cr_or_lf(at(pos))) ++pos;
        emit(pos);
        return true;
    }

    // The whitespace rules: \s*[\r\n]+ (when newlines_rule), then \s+(?!\S), then \s+; and a
    // code point no rule takes becomes a word alone.
    void whitespace(size_t& pos, bool newlines_rule) {
        size_t n = 0, after_last_newline = 0;
        while (cls(pos + n) & kSpace) {
            if (is_cr_or_lf(at(pos + n))) after_last_newline = pos + n + 1;
            ++n;
        }
        if (newlines_rule && after_last_newline) {
            pos = after_last_newline;
        } else if (n > 1 && at(pos + n) != kOutside) {
            pos += n - 1;  // the last space goes with the word that follows
        } else {
            pos += n ? n : 1;
        }
        emit(pos);
    }

private:
    std::span<const uint32_t> cps_;
    std::span<const uint8_t> cls_;
    size_t begin_, end_, last_;
    std::vector<size_t>& out_;
};

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
void split_gpt2(Segment& s) {
    for (size_t pos = s.begin(); pos < s.end();) {
        if (size_t n = s.contraction(pos, false)) {
            pos += s.emit(pos + n);
            continue;
        }
        const uint8_t next = s.at(pos) == ' ' ? s.cls(pos + 1) : s.cls(pos);
        if (next & (kLetter | kNumber)) {
            const uint8_t run = next & kLetter ? kLetter : kNumber;
            pos += s.at(pos) == ' ';
            while (s.cls(pos) & run) ++pos;
            s.emit(pos);
            continue;
        }
        if (s.optional_space_then_run(pos, kSpace | kLetter | kNumber, false, false)) continue;
        s.whitespace(pos, false);
    }
}

// llama-bpe: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
//            |\s*[\r\n]+|\s+(?!\S)|\s+
// qwen2: the same with \p{N} one digit at a time; qwen35: marks count with letters ([\p{L}\p{M}]+).
void split_llama3_family(Segment& s, size_t max_digits, uint8_t letters) {
    for (size_t pos = s.begin(); pos < s.end();) {
        if (size_t n = s.contraction(pos, true)) {
            pos += s.emit(pos + n);
            continue;
        }
        const uint32_t c = s.at(pos);
        const uint8_t cls = s.cls(pos);
        if (!is_cr_or_lf(c) && !(cls & kNumber) && ((cls & letters) || (s.cls(pos + 1) & letters))) {
            ++pos;
            while (s.cls(pos) & letters) ++pos;
            s.emit(pos);
            continue;
        }
        if (cls & kNumber) {
            s.number_run(pos, max_digits);
            continue;
        }
        if (s.optional_space_then_run(pos, kSpace | letters | kNumber, true, true)) continue;
        s.whitespace(pos, true);
    }
}

// kimi-k2, as llama.cpp runs it: Han runs; an optional leading non-letter/number then a run of
// non-Han letters and an optional contraction; \p{N}{1,3}; ' ?[^\s\p{L}\p{N}]+[\r\n]*'; then
// the whitespace rules.
void split_kimi_k2(Segment& s) {
    auto word_letter = [&](size_t i) { return (s.cls(i) & (kLetter | kHan)) == kLetter; };
    for (size_t pos = s.begin(); pos < s.end();) {
        const uint32_t c = s.at(pos);
        const uint8_t cls = s.cls(pos);
        if (cls & kHan) {
            while (s.cls(pos) & kHan) ++pos;
            s.emit(pos);
            continue;
        }
        const bool can_lead = !is_cr_or_lf(c) && !(cls & (kLetter | kNumber));
        if (word_letter(pos) || (can_lead && word_letter(pos + 1))) {
            pos += can_lead;
            while (word_letter(pos)) ++pos;
            pos += s.contraction(pos, true);
            s.emit(pos);
            continue;
        }
        if (cls & kNumber) {
            s.number_run(pos, 3);
            continue;
        }
        if (s.optional_space_then_run(pos, kSpace | kLetter | kNumber, true, false)) continue;
        s.whitespace(pos, true);
    }
}

struct RuleSet {
    std::vector<std::string_view> names;  // the first is the canonical one
    std::vector<const char*> regexes;     // llama.cpp's regex_exprs; a hand-written one by its pattern
    bool ignore_merges = false, clean_spaces = true, add_bos = false;
};

// Which steps llama.cpp runs by hand: the exact pattern strings it recognises.
Splitter splitter_for(std::string_view pattern) {
    if (pattern == patterns::gpt2) return Splitter::gpt2;
    if (pattern == patterns::llama3) return Splitter::llama3;
    if (pattern == patterns::qwen2) return Splitter::qwen2;
    if (pattern == patterns::qwen35) return Splitter::qwen35;
    if (pattern == patterns::kimi_k2) return Splitter::kimi_k2;
    return Splitter::regex;
}

// llama.cpp's tokenizer.ggml.pre names of the families strata runs, with their rule sets and
// the settings llama.cpp ties to them (src/llama-vocab.cpp).
const std::vector<RuleSet>& rule_sets() {
    using namespace patterns;
    static const std::vector<RuleSet> sets = {
        {{"default"}, {default_punct, gpt2, digits, digits_3_ascii}},
        {{"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "exaone4"}, {gpt2}},
        {{"trillion", "granite-docling"}, {gpt2}, false, false},
        {{"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral"}, {llama3}, true, true, true},
        {{"dbrx", "smaug-bpe"}, {llama3}},
        {{"deepseek-llm"}, {deepseek_llm_newline, deepseek_llm_letters, deepseek_llm_punct, deepseek_llm_trailing_space,
                            deepseek_llm_cjk, deepseek_llm_digits}, false, false},
        {{"deepseek-coder"}, {deepseek_llm_newline, deepseek_coder_letters, deepseek_coder_punct, deepseek_llm_cjk,
                              deepseek_coder_digit}, false, false},
        {{"deepseek-v3", "hunyuan-dense", "hy_v4", "joyai-llm"}, {deepseek_v3_digits, deepseek_v3_cjk, deepseek_v3_words},
         false, false},
        {{"falcon"}, {falcon_punct, gpt2, digits_3_ascii}},
        {{"starcoder", "refact", "codeshell", "exaone", "minerva-7b"}, {digit, gpt2}},
        {{"command-r"}, {digit, gpt2}, false, false},
        {{"smollm"}, {digit, gpt2}, false, false},
        {{"qwen2", "deepseek-r1-qwen", "hunyuan"}, {qwen2}, false, false},
        {{"stablelm2", "megrez"}, {qwen2}},
        {{"qwen35"}, {qwen35}, false, false},
        {{"kimi-k2"}, {kimi_k2}, false, false},
        // Families of other runtimes' models that llama.cpp also names, on the same engine.
        {{"gpt-4o", "llama4", "minimax-m2", "kanana2", "talkie"}, {gpt4o}, false, false},
        {{"tekken"}, {tekken}, true, false, true},
        {{"viking"}, {viking_words, digit}, false, false},
        {{"bloom", "gpt3-finnish"}, {viking_words}},
        {{"poro-chat"}, {viking_words}, false, false},
        {{"superbpe"}, {digits, superbpe_groups}, false, false},
        {{"bailingmoe", "bailingmoe2", "llada-moe"}, {bailingmoe}, false, false},
        {{"seed-coder"}, {seed_coder}, false, false},
        {{"grok-2"}, {grok2}, false, false},
        {{"jais-2"}, {jais2}},
    };
    return sets;
}

// Compiled regexes, shared by every vocabulary that uses them.
std::shared_ptr<const Regex> compiled(const char* pattern) {
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<const Regex>> cache;
    std::lock_guard lock(mutex);
    auto& slot = cache[pattern];
    if (!slot) slot = std::make_shared<const Regex>(Regex::compile(pattern));
    return slot;
}

}  // namespace

std::string PreTokenizer::supported_names() {
    std::string out;
    for (const RuleSet& r : rule_sets())
        for (std::string_view n : r.names) out += (out.empty() ? "'" : ", '") + std::string(n) + "'";
    return out;
}

std::shared_ptr<const PreTokenizer> PreTokenizer::named(std::string_view name) {
    for (const RuleSet& r : rule_sets()) {
        if (std::find(r.names.begin(), r.names.end(), name) == r.names.end()) continue;
        std::shared_ptr<PreTokenizer> p(new PreTokenizer);
        p->name_ = std::string(name);
        p->ignore_merges_ = r.ignore_merges;
        p->clean_spaces_ = r.clean_spaces;
        p->add_bos_ = r.add_bos;
        for (const char* pattern : r.regexes) {
            const Splitter kind = splitter_for(pattern);
            p->steps_.push_back({kind, kind == Splitter::regex ? compiled(pattern) : nullptr});
        }
        return p;
    }
    fail(Status::unsupported, "tokenizer.ggml.pre = '" + std::string(name) + "' is not a pre-tokenizer strata knows (" +
                                  supported_names() + ")");
}

PreTokenizer::~PreTokenizer() = default;

std::vector<size_t> split_by_hand(Splitter kind, std::span<const uint32_t> cps, const std::vector<size_t>& offsets) {
    std::vector<uint8_t> cls(cps.size());
    for (size_t i = 0; i < cps.size(); ++i) cls[i] = classes(cps[i]);
    std::vector<size_t> out;
    out.reserve(offsets.size() + cps.size() / 4);
    size_t begin = 0;
    for (size_t len : offsets) {
        Segment s(cps, cls, begin, begin + len, out);
        switch (kind) {
            case Splitter::gpt2: split_gpt2(s); break;
            case Splitter::llama3: split_llama3_family(s, 3, kLetter); break;
            case Splitter::qwen2: split_llama3_family(s, 1, kLetter); break;
            case Splitter::qwen35: split_llama3_family(s, 1, kLetter | kMark); break;
            case Splitter::kimi_k2: split_kimi_k2(s); break;
            case Splitter::regex: fail(Status::internal, "split_by_hand: a regex step has no hand-written splitter");
        }
        begin += len;
    }
    return out;
}

std::vector<std::string> pre_tokenize(const PreTokenizer& pre, std::string_view text) {
    std::vector<uint32_t> cps;
    decode_utf8_lenient(text, cps);
    std::vector<std::string> words;
    size_t begin = 0;
    for (size_t len : pre.split(cps)) {
        words.emplace_back();
        encode_utf8(std::span<const uint32_t>(cps).subspan(begin, len), words.back());
        begin += len;
    }
    return words;
}

std::vector<size_t> PreTokenizer::split(std::span<const uint32_t> cps) const {
    std::vector<size_t> words;
    if (cps.empty()) return words;
    words.push_back(cps.size());
    // llama.cpp's std::regex steps see every non-ASCII whitespace code point as U+000B (its
    // stand-in, which \s matches): such a code point never matches a literal range or a \p
    // class there, e.g. U+2028 is not in deepseek's [ࠀ-一] nor U+3000 in its [　-。].
    std::vector<uint32_t> seen_by_regex;
    for (const Step& step : steps_) {
        if (step.kind != Splitter::regex) {
            words = split_by_hand(step.kind, cps, words);
            continue;
        }
        if (seen_by_regex.empty()) {
            seen_by_regex.assign(cps.begin(), cps.end());
            for (uint32_t& cp : seen_by_regex)
                if (cp > 0x7F && is_whitespace(cp)) cp = 0x0B;
        }
        words = regex_split(*step.regex, seen_by_regex, words);
    }
    // An empty match (superbpe's lookahead-only pattern) leaves an empty word: it spells nothing.
    std::erase(words, size_t{0});
    return words;
}

}  // namespace strata::token
