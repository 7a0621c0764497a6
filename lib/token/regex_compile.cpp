// Syntax tree -> program (token/regex_program.hpp): counted repeats are expanded into copies,
// alternations and loops become prioritized splits, lookahead bodies separate instruction lists.
#include <algorithm>
#include <map>
#include <string>

#include "token/regex_ast.hpp"
#include "token/unicode.hpp"
#include "util/error.hpp"

namespace strata::token::regex_detail {

namespace {

bool consumes(Op op) { return op == Op::literal || op == Op::literal_fold || op == Op::char_class; }

// Whether a node can match the empty string.
bool nullable(const Node& n) {
    switch (n.kind) {
        case Node::Kind::literal: case Node::Kind::char_class: return false;
        case Node::Kind::concat:
            for (const Node& c : n.children)
                if (!nullable(c)) return false;
            return true;
        case Node::Kind::alternate:
            for (const Node& c : n.children)
                if (nullable(c)) return true;
            return false;
        case Node::Kind::repeat: return n.min == 0 || nullable(n.children.front());
        default: return true;
    }
}

// Counted repeats multiply the program; beyond these the pattern is refused rather than making
// compiling slow or the matcher's memo (a bit per memoized split and position explored) huge.
constexpr size_t kMaxInstructions = 50000;
constexpr uint32_t kMaxMemoSplits = 2000;
// Branch first sets (Inst::x_first) are an optimization: past these, a branch is just tried.
constexpr size_t kMaxFirstVisit = 512;  // instructions visited to find a branch's first consumers
constexpr size_t kMaxFirstSets = 128;

class Compiler {
public:
    Compiler(Program& program, std::string_view pattern) : program_(program), pattern_(pattern) {}

    void compile(const Node& root, Code& code) {
        code_ = &code;
        emit(root);
        add({.op = Op::match});
    }

private:
    uint32_t here() const { return uint32_t(code_->insts.size()); }

    uint32_t add(Inst inst) {
        if (++total_ > kMaxInstructions)
            fail(Status::unsupported, "regex /" + std::string(pattern_) + "/: compiles to more than " +
                                          std::to_string(kMaxInstructions) + " instructions (counted repeats too large)");
        if (inst.op == Op::split) inst.arg = code_->splits++;
        if (consumes(inst.op)) inst.x = here() + 1;
        code_->insts.push_back(inst);
        return here() - 1;
    }
    Inst& at(uint32_t pc) { return code_->insts[pc]; }

    void emit(const Node& n) {
        switch (n.kind) {
            case Node::Kind::empty: return;
            case Node::Kind::literal: add({.op = n.fold ? Op::literal_fold : Op::literal, .arg = n.value}); return;
            case Node::Kind::char_class: add({.op = Op::char_class, .arg = n.value}); return;
            case Node::Kind::concat:
                for (const Node& c : n.children) emit(c);
                return;
            case Node::Kind::alternate: emit_alternation(n); return;
            case Node::Kind::repeat: emit_repeat(n); return;
            case Node::Kind::assertion: add({.op = Op(n.value)}); return;
            case Node::Kind::lookahead: emit_lookahead(n); return;
        }
    }

    void emit_alternation(const Node& n) {
        std::vector<uint32_t> exits;
        for (size_t k = 0; k + 1 < n.children.size(); ++k) {
            const uint32_t split = add({.op = Op::split});
            at(split).x = here();
            emit(n.children[k]);
            exits.push_back(add({.op = Op::jump}));
            at(split).y = here();
        }
        emit(n.children.back());
        for (uint32_t j : exits) at(j).x = here();
    }

    // A split whose preferred branch is the body (greedy) or the way out (lazy).
    void point_split(uint32_t split, uint32_t body, uint32_t out, bool greedy) {
        at(split).x = greedy ? body : out;
        at(split).y = greedy ? out : body;
    }

    // One iteration that ECMAScript checks: when it consumes nothing it fails (RepeatMatcher's
    // "min = 0 and endIndex unchanged"). For a body that can match empty this is the body twice:
    // a copy run while nothing is consumed, whose end fails, and a copy the first consumed code
    // point moves into, whose end goes on. (Without captures no register is needed, so the memo
    // of (split, position) stays exact.)
    void emit_checked(const Node& body) {
        if (!nullable(body)) {
            emit(body);
            return;
        }
        const uint32_t empty_copy = here();
        emit(body);
        const uint32_t length = here() - empty_copy;
        add({.op = Op::fail});
        const uint32_t consumed_copy = here();
        emit(body);
        for (uint32_t pc = empty_copy; pc < empty_copy + length; ++pc)
            if (consumes(at(pc).op)) at(pc).x += consumed_copy - empty_copy;
    }

    void emit_repeat(const Node& n) {
        const Node& body = n.children.front();
        for (uint32_t k = 0; k < n.min; ++k) emit(body);  // iterations up to min are not checked
        if (n.max == Node::kUnbounded) {
            const uint32_t split = add({.op = Op::split});  // "again?" then the body
            emit_checked(body);
            add({.op = Op::jump, .x = split});
            point_split(split, split + 1, here(), n.greedy);
            return;
        }
        std::vector<uint32_t> splits;  // x{0,k}: (x(x(x)?)?)?, every "no" leaves the whole repeat
        for (uint32_t k = n.min; k < n.max; ++k) {
            splits.push_back(add({.op = Op::split}));
            emit_checked(body);
        }
        for (uint32_t s : splits) point_split(s, s + 1, here(), n.greedy);
    }

    void emit_lookahead(const Node& n) {
        const uint32_t index = uint32_t(program_.lookaheads.size());
        program_.lookaheads.emplace_back();
        Code* outer = code_;
        Code body;
        code_ = &body;
        emit(n.children.front());
        add({.op = Op::match});
        program_.lookaheads[index] = std::move(body);
        code_ = outer;
        add({.op = Op::lookahead, .arg = index, .y = n.negated ? 1u : 0u});
    }

    Program& program_;
    std::string_view pattern_;
    Code* code_ = nullptr;
    size_t total_ = 0;
};

// The consuming instructions reachable from a pc without consuming; false when a match is,
// or when more than `limit` instructions are visited. Reusable across calls on one code.
class FirstConsumers {
public:
    explicit FirstConsumers(const Code& code) : code_(code), stamp_(code.insts.size(), 0) {}

    bool find(uint32_t start, std::vector<Inst>& out, size_t limit) {
        ++generation_;
        size_t visited = 0;
        todo_.assign(1, start);
        while (!todo_.empty()) {
            const uint32_t pc = todo_.back();
            todo_.pop_back();
            if (stamp_[pc] == generation_) continue;
            if (++visited > limit) return false;
            stamp_[pc] = generation_;
            const Inst& in = code_.insts[pc];
            if (consumes(in.op)) {
                out.push_back(in);
            } else if (in.op == Op::match) {
                return false;
            } else if (in.op == Op::fail) {
                continue;
            } else if (in.op == Op::split) {
                todo_.push_back(in.x);
                todo_.push_back(in.y);
            } else if (in.op == Op::jump) {
                todo_.push_back(in.x);
            } else {  // assertions: whatever they require, the next instruction decides what is read
                todo_.push_back(pc + 1);
            }
        }
        return true;
    }

private:
    const Code& code_;
    std::vector<uint32_t> stamp_;
    uint32_t generation_ = 0;
    std::vector<uint32_t> todo_;
};

// Gives memo indices only to the splits that can be reached after consuming something, and
// marks straight lookahead bodies.
void assign_memo(Code& code) {
    const size_t m = code.insts.size();
    std::vector<uint8_t> after_consuming(m, 0);
    std::vector<uint32_t> todo;
    for (uint32_t pc = 0; pc < m; ++pc)
        if (consumes(code.insts[pc].op)) todo.push_back(code.insts[pc].x);
    while (!todo.empty()) {
        const uint32_t pc = todo.back();
        todo.pop_back();
        if (after_consuming[pc]) continue;
        after_consuming[pc] = 1;
        const Inst& in = code.insts[pc];
        if (in.op == Op::split) {
            todo.push_back(in.x);
            todo.push_back(in.y);
        } else if (in.op == Op::jump || consumes(in.op)) {
            todo.push_back(in.x);
        } else if (in.op != Op::match && in.op != Op::fail) {
            todo.push_back(pc + 1);
        }
    }
    code.splits = 0;
    for (uint32_t pc = 0; pc < m; ++pc) {
        Inst& in = code.insts[pc];
        if (in.op == Op::split) in.arg = after_consuming[pc] ? code.splits++ : kNoMemo;
    }
    code.straight = true;
    for (uint32_t pc = 0; pc + 1 < m; ++pc)
        if (!consumes(code.insts[pc].op)) code.straight = false;
}

// The Basic Multilingual Plane code points the first consuming instructions accept.
std::vector<uint64_t> first_bitmap(const Program& p, const std::vector<Inst>& starts) {
    std::vector<uint64_t> bits(0x10000 / 64, 0);
    for (const Inst& in : starts) {
        if (in.op == Op::char_class) {
            const auto& words = p.classes[in.arg].bitmap();
            for (size_t w = 0; w < bits.size(); ++w) bits[w] |= words[w];
        } else if (in.op == Op::literal) {
            if (in.arg < 0x10000) bits[in.arg >> 6] |= uint64_t(1) << (in.arg & 63);
        } else {  // literal_fold: every code point that lowercases to arg
            for (uint32_t cp = 0; cp < 0x10000; ++cp)
                if (accepts(p, in, cp)) bits[cp >> 6] |= uint64_t(1) << (cp & 63);
        }
    }
    return bits;
}

void build_first_chars(Program& p) {
    std::map<std::vector<uint64_t>, uint32_t> known;
    FirstConsumers consumers(p.main);
    const auto first_set = [&](uint32_t pc) {
        std::vector<Inst> starts;
        if (p.first_sets.size() >= kMaxFirstSets || !consumers.find(pc, starts, kMaxFirstVisit)) return kAnyFirst;
        auto [it, added] = known.try_emplace(first_bitmap(p, starts), uint32_t(p.first_sets.size()));
        if (added) p.first_sets.push_back(it->first);
        return it->second;
    };
    for (Inst& in : p.main.insts) {
        if (in.op != Op::split) continue;
        in.x_first = first_set(in.x);
        in.y_first = first_set(in.y);
    }
    std::vector<Inst> starts;
    if (!consumers.find(0, starts, kMaxFirstVisit)) return;
    p.first_chars.bitmap = first_bitmap(p, starts);
    p.first_chars.starts = std::move(starts);
}

}  // namespace

bool accepts(const Program& program, const Inst& inst, uint32_t cp) {
    switch (inst.op) {
        case Op::literal: return cp == inst.arg;
        case Op::literal_fold: return to_lower(cp) == inst.arg;
        case Op::char_class: return program.classes[inst.arg].contains(cp);
        default: return false;
    }
}

std::unique_ptr<Program> compile_program(std::string_view pattern_utf8) {
    Parsed parsed = parse_pattern(pattern_utf8);
    auto program = std::make_unique<Program>();
    program->pattern = std::string(pattern_utf8);
    program->classes = std::move(parsed.classes);
    Compiler(*program, pattern_utf8).compile(parsed.root, program->main);
    assign_memo(program->main);
    if (program->main.splits > kMaxMemoSplits)
        fail(Status::unsupported, "regex /" + std::string(pattern_utf8) + "/: more than " +
                                      std::to_string(kMaxMemoSplits) + " alternatives and optional repeats");
    for (Code& body : program->lookaheads) assign_memo(body);
    build_first_chars(*program);
    return program;
}

}  // namespace strata::token::regex_detail
