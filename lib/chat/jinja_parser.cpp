#include "chat/jinja_parser.hpp"

#include <set>

#include "chat/jinja_error.hpp"
#include "chat/jinja_lexer.hpp"

namespace strata::chat {

namespace {

// The statement tags jinja2 knows and strata does not implement.
bool known_unsupported_tag(const std::string& name) {
    return name == "extends" || name == "block" || name == "include" || name == "import" || name == "from" ||
           name == "autoescape" || name == "trans" || name == "do";
}

std::string describe(const Token& t) {
    switch (t.type) {
        case Tok::data: return "template data";
        case Tok::variable_begin: return "begin of print statement";
        case Tok::variable_end: return "end of print statement";
        case Tok::block_begin: return "begin of statement block";
        case Tok::block_end: return "end of statement block";
        case Tok::name: return t.value;
        case Tok::string: return "string";
        case Tok::integer: return "integer";
        case Tok::floating: return "float";
        case Tok::op: return t.value;
        case Tok::eof: return "end of template";
    }
    return "?";
}

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

    Template run() {
        Template tpl;
        tpl.body = statements({});
        tpl.filters = std::move(filters_);
        tpl.tests = std::move(tests_);
        if (cur().type != Tok::eof) syntax_error(cur().line, "unexpected '" + describe(cur()) + "'");
        return tpl;
    }

private:
    std::vector<Token> t_;
    size_t p_ = 0;
    int depth_ = 0;
    std::vector<std::string> open_tags_;           // for "unclosed block" messages
    std::vector<std::set<std::string>*> macro_names_;  // names read inside the macros being parsed
    std::vector<std::pair<std::string, int>> filters_, tests_;

    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& parser) : p(parser) {
            if (++p.depth_ > kMaxParseDepth)
                syntax_error(p.cur().line, "the template nests deeper than " + std::to_string(kMaxParseDepth) + " levels");
        }
        ~DepthGuard() { --p.depth_; }
    };

    const Token& cur() const { return t_[p_]; }
    const Token& look(size_t n = 1) const { return t_[std::min(p_ + n, t_.size() - 1)]; }
    const Token& next() {
        const Token& t = t_[p_];
        if (p_ + 1 < t_.size()) ++p_;
        return t;
    }
    bool is_op(const char* op) const { return cur().type == Tok::op && cur().value == op; }
    bool is_name(const char* name) const { return cur().type == Tok::name && cur().value == name; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char* name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    [[noreturn]] void unexpected(const std::string& wanted) const {
        if (cur().type == Tok::eof) {
            std::string msg = "unexpected end of template";
            if (!open_tags_.empty()) msg += ", the '" + open_tags_.back() + "' block is never closed";
            syntax_error(cur().line, msg);
        }
        syntax_error(cur().line, "expected " + wanted + ", got '" + describe(cur()) + "'");
    }
    void expect_op(const char* op) {
        if (!skip_op(op)) unexpected(std::string("'") + op + "'");
    }
    std::string expect_name() {
        if (cur().type != Tok::name) unexpected("a name");
        return next().value;
    }
    void expect_block_end() {
        if (cur().type != Tok::block_end) unexpected("end of statement block");
        next();
    }

    ExprPtr node(ExprKind kind, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = line;
        return e;
    }

    // --- statements ---

    // Parses until a block tag whose name is one of `ends` (left current: the name token).
    Body statements(const std::vector<std::string>& ends) {
        DepthGuard guard(*this);
        Body body;
        while (true) {
            const Token& t = cur();
            if (t.type == Tok::eof) {
                if (!ends.empty()) unexpected("'" + ends.front() + "'");
                return body;
            }
            if (t.type == Tok::data) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::text;
                s->line = t.line;
                s->text = t.value;
                body.push_back(std::move(s));
                next();
            } else if (t.type == Tok::variable_begin) {
                next();
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::output;
                s->line = t.line;
                s->expr = tuple_expr(true, {});
                if (cur().type != Tok::variable_end) unexpected("end of print statement");
                next();
                body.push_back(std::move(s));
            } else if (t.type == Tok::block_begin) {
                next();
                if (cur().type == Tok::name)
                    for (const auto& e : ends)
                        if (cur().value == e) return body;
                body.push_back(statement());
            } else {
                unexpected("template data or a tag");
            }
        }
    }

    // Parses the body up to one of `ends` and consumes "{% end %}" when drop.
    Body block_body(const std::string& tag, const std::vector<std::string>& ends) {
        open_tags_.push_back(tag);
        Body b = statements(ends);
        open_tags_.pop_back();
        return b;
    }

    StmtPtr statement() {
        const Token& t = cur();
        if (t.type != Tok::name) syntax_error(t.line, "tag name expected");
        const std::string tag = t.value;
        const int line = t.line;
        auto s = std::make_unique<Stmt>();
        s->line = line;
        if (tag == "if") {
            next();
            s->kind = StmtKind::if_;
            while (true) {
                ExprPtr cond = tuple_expr(false, {});
                expect_block_end();
                Body b = block_body("if", {"elif", "else", "endif"});
                s->branches.emplace_back(std::move(cond), std::move(b));
                const std::string which = next().value;
                if (which == "elif") continue;
                if (which == "else") {
                    expect_block_end();
                    s->else_body = block_body("if", {"endif"});
                    next();
                }
                break;
            }
            expect_block_end();
        } else if (tag == "for") {
            next();
            s->kind = StmtKind::for_;
            s->target = target(false, "in");
            if (!skip_name("in")) unexpected("'in'");
            s->expr = tuple_expr(false, "recursive");
            if (skip_name("if")) s->loop_filter = expression(true);
            s->recursive = skip_name("recursive");
            expect_block_end();
            s->body = block_body("for", {"endfor", "else"});
            if (next().value == "else") {
                expect_block_end();
                s->else_body = block_body("for", {"endfor"});
                next();
            }
            expect_block_end();
        } else if (tag == "set") {
            next();
            s->target = target(true, "");
            if (skip_op("=")) {
                s->kind = StmtKind::set;
                s->expr = tuple_expr(true, {});
                expect_block_end();
            } else {
                s->kind = StmtKind::set_block;
                if (s->target.tuple || !s->target.attribute.empty())
                    syntax_error(line, "a block set assigns to one name");
                while (is_op("|")) s->filters.push_back(filter_chain_link(nullptr));
                expect_block_end();
                s->body = block_body("set", {"endset"});
                next();
                expect_block_end();
            }
        } else if (tag == "macro") {
            next();
            s->kind = StmtKind::macro;
            s->name = expect_name();
            params(*s);
            expect_block_end();
            std::set<std::string> names;
            macro_names_.push_back(&names);
            s->body = block_body("macro", {"endmacro"});
            macro_names_.pop_back();
            next();
            skip_name_if(s->name);
            expect_block_end();
            s->uses_caller = names.count("caller") > 0;
            s->uses_varargs = names.count("varargs") > 0;
            s->uses_kwargs = names.count("kwargs") > 0;
        } else if (tag == "call") {
            next();
            s->kind = StmtKind::call_block;
            if (is_op("(")) params(*s);
            s->expr = expression(true);
            if (s->expr->kind != ExprKind::call) syntax_error(line, "expected call");
            expect_block_end();
            std::set<std::string> names;
            macro_names_.push_back(&names);
            s->body = block_body("call", {"endcall"});
            macro_names_.pop_back();
            next();
            expect_block_end();
            s->uses_varargs = names.count("varargs") > 0;
            s->uses_kwargs = names.count("kwargs") > 0;
        } else if (tag == "filter") {
            next();
            s->kind = StmtKind::filter_block;
            s->filters.push_back(filter_chain_link(nullptr, true));
            while (is_op("|")) s->filters.push_back(filter_chain_link(nullptr));
            expect_block_end();
            s->body = block_body("filter", {"endfilter"});
            next();
            expect_block_end();
        } else if (tag == "with") {
            next();
            s->kind = StmtKind::with;
            while (cur().type != Tok::block_end) {
                if (!s->assignments.empty()) expect_op(",");
                Target tg = target(false, "");
                expect_op("=");
                s->assignments.emplace_back(std::move(tg), expression(true));
            }
            expect_block_end();
            s->body = block_body("with", {"endwith"});
            next();
            expect_block_end();
        } else if (tag == "print") {
            next();
            s->kind = StmtKind::output;
            s->expr = tuple_expr(true, {});
            expect_block_end();
        } else if (tag == "break" || tag == "continue") {
            next();
            bool in_loop = false;
            for (const auto& o : open_tags_) in_loop = in_loop || o == "for";
            if (!in_loop)
                syntax_error(line, "'" + tag + "' outside of a loop");
            s->kind = tag == "break" ? StmtKind::break_ : StmtKind::continue_;
            expect_block_end();
        } else if (known_unsupported_tag(tag)) {
            unsupported_error(line, "the tag '" + tag + "' is not supported");
        } else {
            std::string msg = "Encountered unknown tag '" + tag + "'";
            if (!open_tags_.empty()) msg += " inside an unclosed '" + open_tags_.back() + "' block";
            syntax_error(line, msg);
        }
        return s;
    }

    void skip_name_if(const std::string& name) {
        if (cur().type == Tok::name && cur().value == name) next();
    }

    void params(Stmt& s) {
        expect_op("(");
        while (!is_op(")")) {
            if (!s.params.empty()) expect_op(",");
            if (is_op(")")) break;
            MacroParam p;
            p.name = expect_name();
            if (skip_op("=")) p.default_value = expression(true);
            else
                for (const auto& q : s.params)
                    if (q.default_value) syntax_error(cur().line, "non-default argument follows default argument");
            s.params.push_back(std::move(p));
        }
        expect_op(")");
    }

    // for-targets and set-targets: a name, names separated by commas, or ns.attr (set only).
    Target target(bool with_namespace, const char* end_name) {
        Target tg;
        while (true) {
            if (!tg.names.empty()) {
                if (!skip_op(",")) break;
                tg.tuple = true;
                if (is_op("=") || cur().type == Tok::block_end || (end_name[0] && is_name(end_name))) break;
            }
            bool paren = skip_op("(");
            std::string n = expect_name();
            if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None")
                syntax_error(cur().line, "can't assign to 'const'");
            if (with_namespace && tg.names.empty() && is_op(".")) {
                next();
                tg.names.push_back(n);
                tg.attribute = expect_name();
                return tg;
            }
            tg.names.push_back(n);
            if (paren) {
                while (skip_op(",")) {
                    tg.tuple = true;
                    if (is_op(")")) break;
                    tg.names.push_back(expect_name());
                }
                expect_op(")");
                tg.tuple = true;
            }
            if (!is_op(",")) break;
        }
        return tg;
    }

    // --- expressions ---

    bool tuple_end(const std::string& extra) const {
        if (cur().type == Tok::variable_end || cur().type == Tok::block_end || is_op(")")) return true;
        return !extra.empty() && cur().type == Tok::name && cur().value == extra;
    }

    ExprPtr tuple_expr(bool with_condexpr, const std::string& extra_end, bool explicit_parens = false) {
        const int line = cur().line;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect_op(",");
            if (tuple_end(extra_end)) break;
            items.push_back(expression(with_condexpr));
            if (is_op(",")) is_tuple = true;
            else break;
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items[0]);
            if (!explicit_parens) unexpected("an expression");
        }
        auto e = node(ExprKind::tuple, line);
        e->items = std::move(items);
        return e;
    }

    ExprPtr expression(bool with_condexpr) {
        DepthGuard guard(*this);
        if (!with_condexpr) return or_expr();
        ExprPtr e = or_expr();
        while (is_name("if")) {
            const int line = next().line;
            auto c = node(ExprKind::cond, line);
            c->b = or_expr();
            if (skip_name("else")) c->c = expression(true);
            c->a = std::move(e);
            e = std::move(c);
        }
        return e;
    }

    ExprPtr binary(const char* op, ExprPtr l, ExprPtr r, int line) {
        auto e = node(ExprKind::binary, line);
        e->name = op;
        e->a = std::move(l);
        e->b = std::move(r);
        return e;
    }

    ExprPtr or_expr() {
        ExprPtr l = and_expr();
        while (is_name("or")) {
            int line = next().line;
            l = binary("or", std::move(l), and_expr(), line);
        }
        return l;
    }
    ExprPtr and_expr() {
        ExprPtr l = not_expr();
        while (is_name("and")) {
            int line = next().line;
            l = binary("and", std::move(l), not_expr(), line);
        }
        return l;
    }
    ExprPtr not_expr() {
        if (is_name("not")) {
            DepthGuard guard(*this);
            auto e = node(ExprKind::not_, next().line);
            e->a = not_expr();
            return e;
        }
        return compare();
    }
    ExprPtr compare() {
        const int line = cur().line;
        ExprPtr first = math1();
        std::vector<std::string> ops;
        std::vector<ExprPtr> operands;
        while (true) {
            if (cur().type == Tok::op && (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
                                          cur().value == ">" || cur().value == "<=" || cur().value == ">=")) {
                ops.push_back(next().value);
            } else if (is_name("in")) {
                next();
                ops.push_back("in");
            } else if (is_name("not") && look().type == Tok::name && look().value == "in") {
                next();
                next();
                ops.push_back("notin");
            } else {
                break;
            }
            operands.push_back(math1());
        }
        if (ops.empty()) return first;
        auto e = node(ExprKind::compare, line);
        e->items.push_back(std::move(first));
        for (auto& o : operands) e->items.push_back(std::move(o));
        e->ops = std::move(ops);
        return e;
    }
    ExprPtr math1() {
        ExprPtr l = concat();
        while (is_op("+") || is_op("-")) {
            const Token& t = next();
            std::string op = t.value;
            l = binary(op == "+" ? "+" : "-", std::move(l), concat(), t.line);
        }
        return l;
    }
    ExprPtr concat() {
        const int line = cur().line;
        ExprPtr first = math2();
        if (!is_op("~")) return first;
        auto e = node(ExprKind::concat, line);
        e->items.push_back(std::move(first));
        while (skip_op("~")) e->items.push_back(math2());
        return e;
    }
    ExprPtr math2() {
        ExprPtr l = pow_expr();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token& t = next();
            std::string op = t.value;
            int line = t.line;
            ExprPtr r = pow_expr();
            auto e = node(ExprKind::binary, line);
            e->name = op;
            e->a = std::move(l);
            e->b = std::move(r);
            l = std::move(e);
        }
        return l;
    }
    ExprPtr pow_expr() {
        ExprPtr l = unary(true);
        while (is_op("**")) {
            int line = next().line;
            l = binary("**", std::move(l), unary(true), line);
        }
        return l;
    }
    ExprPtr unary(bool with_filter) {
        DepthGuard guard(*this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            const Token& t = next();
            e = node(t.value == "-" ? ExprKind::neg : ExprKind::pos, t.line);
            e->a = unary(false);
        } else {
            e = primary();
        }
        e = postfix(std::move(e));
        if (with_filter) e = filter_expr(std::move(e));
        return e;
    }

    ExprPtr primary() {
        const Token& t = cur();
        const int line = t.line;
        if (t.type == Tok::name) {
            std::string n = next().value;
            if (n == "true" || n == "True" || n == "false" || n == "False") {
                auto e = node(ExprKind::literal, line);
                e->value = Value::from_bool(n == "true" || n == "True");
                return e;
            }
            if (n == "none" || n == "None") {
                auto e = node(ExprKind::literal, line);
                e->value = Value::none();
                return e;
            }
            for (auto* sink : macro_names_) sink->insert(n);
            auto e = node(ExprKind::name, line);
            e->name = n;
            return e;
        }
        if (t.type == Tok::string) {
            std::string s;
            while (cur().type == Tok::string) s += next().value;  // adjacent literals join
            auto e = node(ExprKind::literal, line);
            e->value = Value::from_string(std::move(s));
            return e;
        }
        if (t.type == Tok::integer || t.type == Tok::floating) {
            const Token& n = next();
            auto e = node(ExprKind::literal, line);
            e->value = n.type == Tok::integer ? Value::from_int(n.integer) : Value::from_float(n.number);
            return e;
        }
        if (is_op("(")) {
            next();
            ExprPtr e = tuple_expr(true, {}, true);
            expect_op(")");
            return e;
        }
        if (is_op("[")) {
            next();
            auto e = node(ExprKind::list, line);
            while (!is_op("]")) {
                if (!e->items.empty()) expect_op(",");
                if (is_op("]")) break;
                e->items.push_back(expression(true));
            }
            expect_op("]");
            return e;
        }
        if (is_op("{")) {
            next();
            auto e = node(ExprKind::dict, line);
            while (!is_op("}")) {
                if (!e->items.empty()) expect_op(",");
                if (is_op("}")) break;
                e->items.push_back(expression(true));
                expect_op(":");
                e->items.push_back(expression(true));
            }
            expect_op("}");
            return e;
        }
        if (t.type == Tok::eof) unexpected("an expression");
        syntax_error(line, "unexpected '" + describe(t) + "'");
    }

    ExprPtr postfix(ExprPtr e) {
        while (true) {
            if (is_op(".") || is_op("[")) e = subscript(std::move(e));
            else if (is_op("(")) e = call(std::move(e));
            else return e;
        }
    }

    ExprPtr filter_expr(ExprPtr e) {
        while (true) {
            if (is_op("|")) e = filter_chain_link(std::move(e));
            else if (is_name("is")) e = test(std::move(e));
            else if (is_op("(")) e = call(std::move(e));
            else return e;
        }
    }

    ExprPtr subscript(ExprPtr obj) {
        const Token& t = next();
        const int line = t.line;
        if (t.value == ".") {
            if (cur().type == Tok::name) {
                auto e = node(ExprKind::getattr, line);
                e->name = next().value;
                e->a = std::move(obj);
                return e;
            }
            if (cur().type != Tok::integer) syntax_error(cur().line, "expected name or number");
            auto e = node(ExprKind::getitem, line);
            e->a = std::move(obj);
            e->b = node(ExprKind::literal, line);
            e->b->value = Value::from_int(next().integer);
            return e;
        }
        std::vector<ExprPtr> args;
        while (!is_op("]")) {
            if (!args.empty()) expect_op(",");
            args.push_back(subscribed());
        }
        expect_op("]");
        auto e = node(ExprKind::getitem, line);
        e->a = std::move(obj);
        if (args.size() == 1) {
            e->b = std::move(args[0]);
        } else {
            e->b = node(ExprKind::tuple, line);
            e->b->items = std::move(args);
        }
        return e;
    }

    ExprPtr subscribed() {
        const int line = cur().line;
        ExprPtr start;
        if (!is_op(":")) {
            start = expression(true);
            if (!is_op(":")) return start;
        }
        next();  // the colon
        auto e = node(ExprKind::slice, line);
        e->a = std::move(start);
        if (!is_op(":") && !is_op("]") && !is_op(",")) e->b = expression(true);
        if (skip_op(":"))
            if (!is_op("]") && !is_op(",")) e->c = expression(true);
        return e;
    }

    void call_args(Expr& e) {
        expect_op("(");
        bool need_comma = false;
        while (!is_op(")")) {
            if (need_comma) {
                expect_op(",");
                if (is_op(")")) break;
            }
            if (is_op("*")) {
                next();
                if (e.dyn_args || e.dyn_kwargs) syntax_error(cur().line, "invalid syntax for function call expression");
                e.dyn_args = expression(true);
            } else if (is_op("**")) {
                next();
                if (e.dyn_kwargs) syntax_error(cur().line, "invalid syntax for function call expression");
                e.dyn_kwargs = expression(true);
            } else if (cur().type == Tok::name && look().type == Tok::op && look().value == "=") {
                if (e.dyn_kwargs) syntax_error(cur().line, "invalid syntax for function call expression");
                std::string key = next().value;
                next();
                e.keywords.push_back(Keyword{key, expression(true)});
            } else {
                if (e.dyn_args || e.dyn_kwargs || !e.keywords.empty())
                    syntax_error(cur().line, "invalid syntax for function call expression");
                e.items.push_back(expression(true));
            }
            need_comma = true;
        }
        expect_op(")");
    }

    ExprPtr call(ExprPtr callee) {
        auto e = node(ExprKind::call, cur().line);
        call_args(*e);
        e->a = std::move(callee);
        return e;
    }

    // One "| name(args)" (or, for a filter block, the first name without the pipe).
    ExprPtr filter_chain_link(ExprPtr subject, bool start_inline = false) {
        if (!start_inline) next();  // the pipe
        const int line = cur().line;
        std::string name = expect_name();
        while (skip_op(".")) name += "." + expect_name();
        auto e = node(ExprKind::filter, line);
        e->name = name;
        filters_.emplace_back(name, line);
        if (is_op("(")) call_args(*e);
        e->a = std::move(subject);
        return e;
    }

    ExprPtr test(ExprPtr subject) {
        const int line = next().line;  // "is"
        bool negated = skip_name("not");
        std::string name = expect_name();
        while (skip_op(".")) name += "." + expect_name();
        auto e = node(ExprKind::test, line);
        e->name = name;
        tests_.emplace_back(name, line);
        if (is_op("(")) {
            call_args(*e);
        } else if ((cur().type == Tok::name || cur().type == Tok::string || cur().type == Tok::integer ||
                    cur().type == Tok::floating || is_op("(") || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
            if (is_name("is")) syntax_error(cur().line, "You cannot chain multiple tests with is");
            e->items.push_back(postfix(primary()));
        }
        e->a = std::move(subject);
        if (!negated) return e;
        auto n = node(ExprKind::not_, line);
        n->a = std::move(e);
        return n;
    }
};

}  // namespace

Template parse_template(std::string_view source) { return Parser(lex_template(source)).run(); }

}  // namespace strata::chat
