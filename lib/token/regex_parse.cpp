// Pattern text -> syntax tree (token/regex_ast.hpp), with the syntax described in token/regex.hpp.
#include <string>

#include "token/regex_ast.hpp"
#include "token/unicode.hpp"
#include "util/error.hpp"

namespace strata::token::regex_detail {

namespace {

constexpr uint32_t kEnd = UINT32_MAX;   // "code point" past the end of the pattern
constexpr uint32_t kMaxRepeat = 10000;  // larger counts only make huge programs
constexpr int kMaxNesting = 200;        // groups inside groups; bounds the parser's recursion

uint32_t category_bit(Category c) { return 1u << unsigned(c); }
uint32_t category_bits(Category first, Category last) {
    return ((2u << unsigned(last)) - 1) & ~((1u << unsigned(first)) - 1);
}

const std::vector<CodeRange> kDigits = {{'0', '9'}};
const std::vector<CodeRange> kWordChars = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};

class Parser {
public:
    explicit Parser(std::string_view pattern) : pattern_(pattern) {
        for (size_t pos = 0; pos < pattern.size();) {
            const CodePoint c = decode_utf8(pattern, pos);
            if (c.cp == 0xFFFD && c.len == 1) invalid(pos, "the pattern is not valid UTF-8");
            cps_.push_back(c.cp);
            offsets_.push_back(pos);
            pos += c.len;
        }
        offsets_.push_back(pattern.size());
    }

    Parsed parse() {
        Parsed out;
        out.root = parse_alternation(0);
        if (peek() == ')') invalid(offset(), "unmatched ')'");
        for (CharClass& c : classes_) c.finish();
        out.classes = std::move(classes_);
        return out;
    }

private:
    [[noreturn]] void invalid(size_t byte_offset, const std::string& what) const {
        fail(Status::invalid_argument, message(byte_offset, what));
    }
    [[noreturn]] void unsupported(size_t byte_offset, const std::string& what) const {
        fail(Status::unsupported, message(byte_offset, what + " is not supported"));
    }
    std::string message(size_t byte_offset, const std::string& what) const {
        return "regex /" + std::string(pattern_) + "/ at offset " + std::to_string(byte_offset) + ": " + what;
    }

    uint32_t peek(size_t ahead = 0) const { return i_ + ahead < cps_.size() ? cps_[i_ + ahead] : kEnd; }
    uint32_t next() { return i_ < cps_.size() ? cps_[i_++] : kEnd; }
    size_t offset() const { return offsets_[i_]; }
    size_t offset_of(size_t index) const { return offsets_[index]; }

    Node parse_alternation(int depth) {
        if (depth > kMaxNesting) unsupported(offset(), "nesting groups deeper than " + std::to_string(kMaxNesting));
        Node alt{.kind = Node::Kind::alternate, .offset = offset()};
        alt.children.push_back(parse_concat(depth));
        while (peek() == '|') {
            ++i_;
            alt.children.push_back(parse_concat(depth));
        }
        if (alt.children.size() == 1) return std::move(alt.children.front());
        return alt;
    }

    Node parse_concat(int depth) {
        Node seq{.kind = Node::Kind::concat, .offset = offset()};
        for (;;) {
            const uint32_t c = peek();
            if (c == kEnd || c == '|' || c == ')') break;
            const size_t atom_start = i_;
            Node atom = parse_atom(depth);
            atom_is_group_ = cps_[atom_start] == '(';
            parse_quantifiers(atom);
            seq.children.push_back(std::move(atom));
        }
        if (seq.children.empty()) return Node{.kind = Node::Kind::empty, .offset = seq.offset};
        if (seq.children.size() == 1) return std::move(seq.children.front());
        return seq;
    }

    static bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }

    // {n}, {n,}, {n,m} starting at the current '{'; false (and nothing consumed) otherwise.
    bool parse_braces(uint32_t& min, uint32_t& max) {
        size_t j = i_ + 1;
        const auto number = [&](uint32_t& value) {
            if (j >= cps_.size() || !is_digit(cps_[j])) return false;
            uint64_t v = 0;
            while (j < cps_.size() && is_digit(cps_[j])) {
                v = std::min<uint64_t>(v * 10 + (cps_[j] - '0'), uint64_t(kMaxRepeat) + 1);
                ++j;
            }
            value = uint32_t(v);
            return true;
        };
        if (!number(min)) return false;
        max = min;
        if (j < cps_.size() && cps_[j] == ',') {
            ++j;
            if (!number(max)) max = Node::kUnbounded;
        }
        if (j >= cps_.size() || cps_[j] != '}') return false;
        i_ = j + 1;
        return true;
    }

    void parse_quantifiers(Node& atom) {
        bool quantified = false;
        for (;;) {
            const size_t at = offset();
            const uint32_t c = peek();
            uint32_t min = 0, max = 0;
            if (c == '*') {
                ++i_, min = 0, max = Node::kUnbounded;
            } else if (c == '+') {
                ++i_, min = 1, max = Node::kUnbounded;
            } else if (c == '?') {
                ++i_, min = 0, max = 1;
            } else if (c == '{') {
                if (!parse_braces(min, max))
                    invalid(at, "'{' does not begin a quantifier {n}, {n,} or {n,m} (write \\{ for the character)");
                if (min > kMaxRepeat || (max != Node::kUnbounded && max > kMaxRepeat))
                    unsupported(at, "a repeat count above " + std::to_string(kMaxRepeat));
                if (max < min) invalid(at, "the quantifier's maximum is below its minimum");
            } else {
                return;
            }
            if (quantified) {
                if (c == '+') unsupported(at, "a possessive quantifier ('+' after a quantifier)");
                invalid(at, "nothing to repeat (a quantifier follows a quantifier)");
            }
            if (atom.kind == Node::Kind::assertion && !atom_is_group_)  // as ECMAScript; (?:^)* is fine
                invalid(at, "nothing to repeat (a quantifier follows an assertion)");
            bool greedy = true;
            if (peek() == '?') {
                ++i_;
                greedy = false;
            }
            Node rep{.kind = Node::Kind::repeat, .greedy = greedy, .min = min, .max = max, .offset = at};
            rep.children.push_back(std::move(atom));
            atom = std::move(rep);
            quantified = true;
        }
    }

    Node class_node(CharClass c, size_t at) {
        c.set_case_insensitive(fold_);
        classes_.push_back(std::move(c));
        return Node{.kind = Node::Kind::char_class, .value = uint32_t(classes_.size() - 1), .offset = at};
    }

    Node literal_node(uint32_t cp, size_t at) {
        return Node{.kind = Node::Kind::literal, .value = fold_ ? to_lower(cp) : cp, .fold = fold_, .offset = at};
    }

    Node parse_atom(int depth) {
        const size_t at = offset();
        const uint32_t c = next();
        switch (c) {
            case '*':
            case '+':
            case '?':
                invalid(at, "nothing to repeat (a quantifier at the start of an alternative)");
            case '{': {
                uint32_t a = 0, b = 0;
                --i_;
                if (parse_braces(a, b)) invalid(at, "nothing to repeat (a quantifier at the start of an alternative)");
                invalid(at, "'{' does not begin a quantifier {n}, {n,} or {n,m} (write \\{ for the character)");
            }
            case '(':
                return parse_group(at, depth);
            case '[':
                return parse_class(at);
            case '.': {
                CharClass dot;
                for (uint32_t x : {0x0Au, 0x0Du, 0x2028u, 0x2029u}) dot.add_range(x, x);
                dot.set_negated(true);
                const bool saved = fold_;
                fold_ = false;
                Node n = class_node(std::move(dot), at);
                fold_ = saved;
                return n;
            }
            case '^':
                return Node{.kind = Node::Kind::assertion, .value = uint32_t(Op::line_start), .offset = at};
            case '$':
                return Node{.kind = Node::Kind::assertion, .value = uint32_t(Op::line_end), .offset = at};
            case '\\':
                return parse_escape(at);
            default:
                return literal_node(c, at);
        }
    }

    Node parse_group(size_t at, int depth) {
        bool lookahead = false, negated = false;
        const bool saved_fold = fold_;
        if (peek() == '?') {
            const uint32_t kind = peek(1);
            const size_t kind_at = offset_of(i_ + 1);
            if (kind == ':') {
                i_ += 2;
            } else if (kind == '=' || kind == '!') {
                i_ += 2;
                lookahead = true;
                negated = kind == '!';
            } else if (kind == '<' && (peek(2) == '=' || peek(2) == '!')) {
                unsupported(at, "lookbehind (?<= or (?<!");
            } else if (kind == '<' || kind == 'P' || kind == '\'') {
                unsupported(at, "a named group");
            } else if (kind == '>') {
                unsupported(at, "an atomic group (?>");
            } else if (kind == '#') {
                unsupported(at, "a comment group (?#");
            } else if (kind == 'i' && peek(2) == ':') {
                i_ += 3;
                fold_ = true;
            } else if ((kind >= 'a' && kind <= 'z') || (kind >= 'A' && kind <= 'Z') || kind == '-') {
                unsupported(kind_at, "an inline flag other than (?i:...)");
            } else {
                invalid(kind_at, "'(?' must be followed by ':', '=', '!' or 'i:'");
            }
        }
        Node body = parse_alternation(depth + 1);
        fold_ = saved_fold;
        if (next() != ')') invalid(at, "the group opened here is not closed");
        if (!lookahead) return body;
        Node look{.kind = Node::Kind::lookahead, .negated = negated, .offset = at};
        look.children.push_back(std::move(body));
        return look;
    }

    uint32_t parse_hex(size_t at, int digits) {
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
            const uint32_t h = next();
            const int d = h >= '0' && h <= '9' ? int(h - '0') : h >= 'a' && h <= 'f' ? int(h - 'a' + 10)
                        : h >= 'A' && h <= 'F' ? int(h - 'A' + 10) : -1;
            if (d < 0) invalid(at, "expected " + std::to_string(digits) + " hexadecimal digits");
            v = v * 16 + uint32_t(d);
        }
        return v;
    }

    // \p{..} / \P{..} (the 'p' or 'P' already read) as a class item.
    CharClass::Item parse_property(size_t at, bool negated) {
        std::string name;
        if (peek() == '{') {
            ++i_;
            while (peek() != '}') {
                const uint32_t c = next();
                if (c == kEnd) invalid(at, "\\p{ is not closed by '}'");
                if (c >= 0x80 || name.size() > 40) invalid(at, "malformed property name in \\p{...}");
                name += char(c);
            }
            ++i_;
        } else {
            const uint32_t c = next();
            if (c == kEnd || c >= 0x80) invalid(at, "\\p must be followed by {Name} or a letter");
            name = char(c);
        }
        CharClass::Item item{.kind = CharClass::ItemKind::categories, .negated = negated, .categories = 0, .ranges = {}};
        if (name == "Han") {
            item.kind = CharClass::ItemKind::han;
            return item;
        }
        if (name.size() == 1) {
            switch (name[0]) {
                case 'L': item.categories = category_bits(Category::Lu, Category::Lo); return item;
                case 'M': item.categories = category_bits(Category::Mn, Category::Me); return item;
                case 'N': item.categories = category_bits(Category::Nd, Category::No); return item;
                case 'P': item.categories = category_bits(Category::Pc, Category::Po); return item;
                case 'S': item.categories = category_bits(Category::Sm, Category::So); return item;
                case 'Z': item.categories = category_bits(Category::Zs, Category::Zp); return item;
                case 'C':
                    item.categories = category_bits(Category::Cc, Category::Co) | category_bit(Category::Cn);
                    return item;
                default: break;
            }
        }
        for (unsigned k = 0; k <= unsigned(Category::Co); ++k) {
            if (category_name(Category(k)) == name) {
                item.categories = 1u << k;
                return item;
            }
        }
        unsupported(at, "the Unicode property \\p{" + name +
                            "} (known: L M N P S Z C, two-letter general categories, Han)");
    }

    // An escape that stands for a set (\d \D \w \W \s \S \p \P), as a class item; false otherwise.
    bool parse_class_escape(uint32_t c, size_t at, CharClass::Item& item) {
        switch (c) {
            case 'd': case 'D':
                item = {.kind = CharClass::ItemKind::ranges, .negated = c == 'D', .categories = 0, .ranges = kDigits};
                return true;
            case 'w': case 'W':
                item = {.kind = CharClass::ItemKind::ranges, .negated = c == 'W', .categories = 0, .ranges = kWordChars};
                return true;
            case 's': case 'S':
                item = {.kind = CharClass::ItemKind::whitespace, .negated = c == 'S', .categories = 0, .ranges = {}};
                return true;
            case 'p': case 'P':
                item = parse_property(at, c == 'P');
                return true;
            default:
                return false;
        }
    }

    // The code point of a character escape (after '\' and c), shared by patterns and classes.
    uint32_t parse_char_escape(uint32_t c, size_t at, bool in_class) {
        switch (c) {
            case 'r': return '\r';
            case 'n': return '\n';
            case 't': return '\t';
            case 'f': return '\f';
            case 'v': return '\v';
            case '0':
                if (is_digit(peek())) unsupported(at, "an octal escape");
                return 0;
            case 'x': return parse_hex(at, 2);
            case 'u':
                if (peek() == '{') {
                    ++i_;
                    uint32_t v = 0;
                    int digits = 0;
                    while (peek() != '}') {
                        const uint32_t d = parse_hex(at, 1);
                        v = v * 16 + d;
                        if (++digits > 6 || v > 0x10FFFF) invalid(at, "\\u{...} is above U+10FFFF");
                    }
                    ++i_;
                    if (digits == 0) invalid(at, "\\u{} has no digits");
                    return v;
                }
                return parse_hex(at, 4);
            case 'b':
                if (in_class) return 0x08;  // ECMAScript: backspace inside a class
                break;
            case 'c': unsupported(at, "a control escape \\c");
            case 'k': unsupported(at, "a named backreference \\k");
            case kEnd: invalid(at, "the pattern ends in '\\'");
            default: break;
        }
        if (c >= '1' && c <= '9') unsupported(at, "a backreference \\" + std::string(1, char(c)));
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            invalid(at, "unknown escape \\" + std::string(1, char(c)));
        return c;  // escaped punctuation or any other character stands for itself
    }

    Node parse_escape(size_t at) {
        const uint32_t c = next();
        if (c == 'b' || c == 'B')
            return Node{.kind = Node::Kind::assertion,
                        .value = uint32_t(c == 'b' ? Op::word_boundary : Op::not_word_boundary), .offset = at};
        CharClass::Item item;
        if (parse_class_escape(c, at, item)) {
            CharClass set;
            set.add_item(std::move(item));
            return class_node(std::move(set), at);
        }
        return literal_node(parse_char_escape(c, at, false), at);
    }

    Node parse_class(size_t at) {
        CharClass set;
        if (peek() == '^') {
            ++i_;
            set.set_negated(true);
        }
        for (;;) {
            const size_t item_at = offset();
            uint32_t c = next();
            if (c == kEnd) invalid(at, "the class opened here is not closed by ']'");
            if (c == ']') break;  // ECMAScript: "[]" is empty, "[^]" is anything
            if (c == '[' && (peek() == ':' || peek() == '.' || peek() == '='))
                unsupported(item_at, "a POSIX class [:name:], [.x.] or [=x=]");
            if (c == '&' && peek() == '&') unsupported(item_at, "class intersection &&");
            uint32_t low = c;
            if (c == '\\') {
                const uint32_t e = next();
                CharClass::Item item;
                if (e == 'B') invalid(item_at, "\\B inside a class");
                if (parse_class_escape(e, item_at, item)) {
                    if (peek() == '-' && peek(1) != ']' && peek(1) != kEnd)
                        invalid(offset(), "a range cannot begin at a class escape such as \\" + std::string(1, char(e)));
                    set.add_item(std::move(item));
                    continue;
                }
                low = parse_char_escape(e, item_at, true);
            }
            if (peek() == '-' && peek(1) != ']' && peek(1) != kEnd) {
                const size_t dash_at = offset();
                ++i_;
                uint32_t high = next();
                if (high == '\\') {
                    const size_t esc_at = offset();
                    const uint32_t e = next();
                    if (e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S' || e == 'p' || e == 'P')
                        invalid(esc_at, "a range cannot end at a class escape such as \\" + std::string(1, char(e)));
                    high = parse_char_escape(e, esc_at, true);
                } else if (high == '[' && (peek() == ':' || peek() == '.' || peek() == '=')) {
                    unsupported(dash_at, "a POSIX class [:name:], [.x.] or [=x=]");
                }
                if (high < low) invalid(dash_at, "the range's end is below its start");
                set.add_range(low, high);
            } else {
                set.add_range(low, low);
            }
        }
        return class_node(std::move(set), at);
    }

    std::string_view pattern_;
    std::vector<uint32_t> cps_;
    std::vector<size_t> offsets_;  // byte offset of each code point, plus the pattern's size
    size_t i_ = 0;
    bool fold_ = false;
    bool atom_is_group_ = false;  // the atom just parsed was written in parentheses
    std::vector<CharClass> classes_;
};

}  // namespace

Parsed parse_pattern(std::string_view pattern_utf8) { return Parser(pattern_utf8).parse(); }

}  // namespace strata::token::regex_detail
