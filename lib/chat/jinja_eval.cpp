#include "chat/jinja_eval.hpp"

#include <ctime>

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_error.hpp"
#include "chat/jinja_globals.hpp"
#include "chat/jinja_json.hpp"
#include "chat/jinja_ops.hpp"

namespace strata::chat {

struct Interpreter::MacroDef {
    const Stmt* stmt = nullptr;               // the macro (or call block) statement
    std::shared_ptr<Scope> closure;           // the scope it was defined in
    std::string name;
};

namespace {

struct Macro : Callable {
    Interpreter::MacroDef def;
    std::shared_ptr<Callable> caller;  // set for the macro a call block invokes
    Value call(Interpreter& in, CallArgs& args) override { return in.run_macro(def, args, nullptr); }
    std::string describe() const override { return "Macro '" + def.name + "'"; }
};

}  // namespace

// The `loop` variable of a for loop: index, length, previtem, cycle(), and loop(...) for
// recursive loops.
struct LoopState : Callable {
    Interpreter* interp = nullptr;
    const Stmt* stmt = nullptr;
    std::shared_ptr<Scope> scope;  // the scope the loop runs in (for recursive calls)
    std::vector<Value> items;
    size_t index0 = 0;
    int depth = 1;
    bool changed_seen = false;
    Value last_changed;

    struct Cycle : Callable {
        const LoopState* loop;
        explicit Cycle(const LoopState* l) : loop(l) {}
        Value call(Interpreter&, CallArgs& args) override {
            if (args.positional.empty()) runtime_error(args.line, "no items for cycling given");
            return args.positional[loop->index0 % args.positional.size()];
        }
        std::string describe() const override { return "bound method LoopContext.cycle"; }
    };
    struct Changed : Callable {
        LoopState* loop;
        explicit Changed(LoopState* l) : loop(l) {}
        Value call(Interpreter&, CallArgs& args) override {
            Value now = Value::new_list(args.positional, true);
            if (loop->changed_seen && equals(now, loop->last_changed)) return Value::from_bool(false);
            loop->changed_seen = true;
            loop->last_changed = now;
            return Value::from_bool(true);
        }
        std::string describe() const override { return "bound method LoopContext.changed"; }
    };

    bool attribute(const std::string& name, Value& out) const override {
        const int64_t n = static_cast<int64_t>(items.size());
        const int64_t i = static_cast<int64_t>(index0);
        if (name == "index") out = Value::from_int(i + 1);
        else if (name == "index0") out = Value::from_int(i);
        else if (name == "revindex") out = Value::from_int(n - i);
        else if (name == "revindex0") out = Value::from_int(n - i - 1);
        else if (name == "first") out = Value::from_bool(i == 0);
        else if (name == "last") out = Value::from_bool(i == n - 1);
        else if (name == "length") out = Value::from_int(n);
        else if (name == "depth") out = Value::from_int(depth);
        else if (name == "depth0") out = Value::from_int(depth - 1);
        else if (name == "previtem") out = i > 0 ? items[index0 - 1] : Value::undefined("there is no previous item");
        else if (name == "nextitem") out = i + 1 < n ? items[index0 + 1] : Value::undefined("there is no next item");
        else if (name == "cycle") out = Value::from_callable(std::make_shared<Cycle>(this));
        else if (name == "changed") out = Value::from_callable(std::make_shared<Changed>(const_cast<LoopState*>(this)));
        else return false;
        return true;
    }
    Value call(Interpreter& in, CallArgs& args) override {
        if (!stmt->recursive)
            runtime_error(args.line, "Tried to call non recursive loop. Maybe you forgot the 'recursive' modifier.");
        if (args.positional.size() != 1 || !args.keyword.empty())
            runtime_error(args.line, "loop() takes exactly one argument");
        return in.run_recursive_loop(*this, args.positional[0], args.line);
    }
    std::string describe() const override { return "LoopContext " + std::to_string(index0 + 1) + "/" + std::to_string(items.size()); }
};

struct Interpreter::NestingGuard {
    Interpreter& in;
    NestingGuard(Interpreter& interp, int line) : in(interp) {
        if (++in.nesting_ > in.limits_.max_nesting) {
            --in.nesting_;
            runtime_error(line, "the template nests deeper than " + std::to_string(in.limits_.max_nesting) +
                                    " levels while rendering (recursion?)");
        }
    }
    ~NestingGuard() { --in.nesting_; }
};

Interpreter::Interpreter(RenderLimits limits) : limits_(limits), globals_(make_globals()) {}

void Interpreter::charge(uint64_t steps, int line) {
    steps_ += steps;
    if (steps_ > limits_.max_steps)
        runtime_error(line, "the template ran more than " + std::to_string(limits_.max_steps) +
                                " steps (a runaway loop?)");
}

void Interpreter::check_size(size_t bytes, int line) const {
    if (bytes > limits_.max_output_bytes)
        runtime_error(line, "the template produced a string longer than " + std::to_string(limits_.max_output_bytes) +
                                " bytes");
}

void Interpreter::append(std::string& out, std::string_view text, int line) {
    check_size(out.size() + text.size(), line);
    out += text;
}

std::shared_ptr<Scope> Interpreter::new_scope() {
    auto s = std::make_shared<Scope>();
    // Loops make a scope per iteration: forget the dead ones now and then, so the list stays
    // as long as the scopes alive, not as long as the run.
    if (scopes_.size() >= 1024 && scopes_.size() == scopes_.capacity())
        std::erase_if(scopes_, [](const std::weak_ptr<Scope>& w) { return w.expired(); });
    scopes_.push_back(s);
    return s;
}

std::string Interpreter::render(const Template& tpl, const Value& variables) {
    struct EmptyScopes {
        std::vector<std::weak_ptr<Scope>>& scopes;
        ~EmptyScopes() {
            for (auto& w : scopes)
                if (auto s = w.lock()) {
                    s->vars.clear();
                    s->parent.reset();
                }
            scopes.clear();
        }
    } empty_scopes{scopes_};
    // jinja2 refuses a template naming a filter or test it does not know when compiling it.
    for (const auto& [name, line] : tpl.filters)
        if (!filter_in_jinja2(name)) unsupported_error(line, "the filter '" + name + "' is not supported (jinja2 has no filter of that name)");
    for (const auto& [name, line] : tpl.tests)
        if (!test_known(name)) unsupported_error(line, "the test '" + name + "' is not supported (jinja2 has no test of that name)");
    auto root = new_scope();
    root->parent = globals_;
    if (variables.is_dict())
        for (const auto& [k, v] : variables.dict->items)
            if (k.is_string()) root->vars[k.text] = v;
    std::string out;
    exec_body(tpl.body, root, out);
    return out;
}

Value Interpreter::lookup(const std::string& name, const std::shared_ptr<Scope>& scope) const {
    for (const Scope* s = scope.get(); s; s = s->parent.get()) {
        auto it = s->vars.find(name);
        if (it != s->vars.end()) return it->second;
    }
    return Value::undefined("'" + name + "' is undefined");
}

Interpreter::Flow Interpreter::exec_body(const Body& body, std::shared_ptr<Scope>& scope, std::string& out) {
    for (const auto& s : body) {
        Flow f = exec(*s, scope, out);
        if (f != Flow::normal) return f;
    }
    return Flow::normal;
}

void Interpreter::assign(const Target& t, const Value& v, std::shared_ptr<Scope>& scope, int line) {
    if (!t.attribute.empty()) {
        Value ns = lookup(t.names[0], scope);
        if (ns.kind != Kind::ns) runtime_error(line, "cannot assign attribute on non-namespace object");
        ns.dict->set(Value::from_string(t.attribute), v);
        return;
    }
    if (!t.tuple) {
        scope->vars[t.names[0]] = v;
        return;
    }
    if (v.is_undefined()) undefined_error(v, line);
    std::vector<Value> parts = iterate(v, line);
    if (parts.size() < t.names.size())
        runtime_error(line, "not enough values to unpack (expected " + std::to_string(t.names.size()) + ", got " +
                                std::to_string(parts.size()) + ")");
    if (parts.size() > t.names.size())
        runtime_error(line, "too many values to unpack (expected " + std::to_string(t.names.size()) + ")");
    for (size_t i = 0; i < parts.size(); ++i) scope->vars[t.names[i]] = parts[i];
}

Value Interpreter::apply_filter_chain(const std::vector<ExprPtr>& filters, Value v, std::shared_ptr<Scope>& scope) {
    for (const auto& f : filters) {
        CallArgs args;
        collect_args(*f, scope, args);
        v = apply_filter(f->name, v, args, f->line);
    }
    return v;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, std::shared_ptr<Scope>& scope, std::string& out) {
    NestingGuard guard(*this, s.line);
    charge(1, s.line);
    switch (s.kind) {
        case StmtKind::text: append(out, s.text, s.line); return Flow::normal;
        case StmtKind::output: {
            Value v = eval(*s.expr, scope);
            if (v.kind == Kind::string) append(out, v.text, s.line);
            else append(out, python_str(v), s.line);
            return Flow::normal;
        }
        case StmtKind::if_: {
            for (const auto& [cond, body] : s.branches)
                if (eval(*cond, scope).truthy()) return exec_body(body, scope, out);
            return exec_body(s.else_body, scope, out);
        }
        case StmtKind::for_: {
            Value iterable = eval(*s.expr, scope);
            exec_for(s, scope, out, iterable, 1);
            return Flow::normal;
        }
        case StmtKind::set: assign(s.target, eval(*s.expr, scope), scope, s.line); return Flow::normal;
        case StmtKind::set_block: {
            std::string captured;
            auto inner = scope;
            exec_body(s.body, inner, captured);
            assign(s.target, apply_filter_chain(s.filters, Value::from_string(std::move(captured)), scope), scope, s.line);
            return Flow::normal;
        }
        case StmtKind::macro: {
            auto m = std::make_shared<Macro>();
            m->def.stmt = &s;
            m->def.closure = scope;
            m->def.name = s.name;
            scope->vars[s.name] = Value::from_callable(m);
            return Flow::normal;
        }
        case StmtKind::call_block: {
            auto caller = std::make_shared<Macro>();
            caller->def.stmt = &s;
            caller->def.closure = scope;
            caller->def.name = "caller";
            const Expr& call = *s.expr;
            Value callee = eval(*call.a, scope);
            CallArgs args;
            collect_args(call, scope, args);
            args.keyword.emplace_back("caller", Value::from_callable(caller));
            Value result = this->call(callee, args, s.line);
            append(out, python_str(result), s.line);
            return Flow::normal;
        }
        case StmtKind::filter_block: {
            std::string captured;
            auto inner = scope;
            exec_body(s.body, inner, captured);
            Value v = apply_filter_chain(s.filters, Value::from_string(std::move(captured)), scope);
            append(out, python_str(v), s.line);
            return Flow::normal;
        }
        case StmtKind::with: {
            auto inner = new_scope();
            inner->parent = scope;
            for (const auto& [target, expr] : s.assignments) assign(target, eval(*expr, scope), inner, s.line);
            return exec_body(s.body, inner, out);
        }
        case StmtKind::break_: return Flow::break_;
        case StmtKind::continue_: return Flow::continue_;
    }
    return Flow::normal;
}

void Interpreter::exec_for(const Stmt& s, std::shared_ptr<Scope>& scope, std::string& out, const Value& iterable,
                           int depth) {
    std::vector<Value> items = iterate(iterable, s.line);
    charge(items.size() / 16, s.line);
    if (s.loop_filter) {
        std::vector<Value> kept;
        for (auto& item : items) {
            charge(1, s.line);
            auto probe = new_scope();
            probe->parent = scope;
            assign(s.target, item, probe, s.line);
            if (eval(*s.loop_filter, probe).truthy()) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    if (items.empty()) {
        auto inner = new_scope();
        inner->parent = scope;
        exec_body(s.else_body, inner, out);
        return;
    }
    auto loop = std::make_shared<LoopState>();
    loop->interp = this;
    loop->stmt = &s;
    loop->scope = scope;
    loop->items = std::move(items);
    loop->depth = depth;
    Value loop_value = Value::from_callable(loop);
    for (size_t i = 0; i < loop->items.size(); ++i) {
        charge(1, s.line);
        loop->index0 = i;
        auto inner = new_scope();
        inner->parent = scope;
        inner->vars["loop"] = loop_value;
        assign(s.target, loop->items[i], inner, s.line);
        if (exec_body(s.body, inner, out) == Flow::break_) break;
    }
}

Value Interpreter::run_recursive_loop(LoopState& loop, const Value& iterable, int line) {
    if (++call_depth_ > limits_.max_call_depth) {
        --call_depth_;
        runtime_error(line, "recursion deeper than " + std::to_string(limits_.max_call_depth) + " calls");
    }
    std::string out;
    try {
        exec_for(*loop.stmt, loop.scope, out, iterable, loop.depth + 1);
    } catch (...) {
        --call_depth_;
        throw;
    }
    --call_depth_;
    return Value::from_string(std::move(out));
}

Value Interpreter::run_macro(const MacroDef& m, CallArgs& args, const Value* caller) {
    const Stmt& s = *m.stmt;
    const int line = args.line;
    if (++call_depth_ > limits_.max_call_depth) {
        --call_depth_;
        runtime_error(line, "recursion deeper than " + std::to_string(limits_.max_call_depth) + " macro calls");
    }
    struct DepthRelease {
        int& d;
        ~DepthRelease() { --d; }
    } release{call_depth_};
    charge(1, line);
    auto scope = new_scope();
    scope->parent = m.closure;
    std::vector<bool> bound(s.params.size(), false);
    for (size_t i = 0; i < args.positional.size() && i < s.params.size(); ++i) {
        scope->vars[s.params[i].name] = args.positional[i];
        bound[i] = true;
    }
    if (args.positional.size() > s.params.size() && !s.uses_varargs)
        runtime_error(line, "macro '" + m.name + "' takes not more than " + std::to_string(s.params.size()) +
                                " argument(s)");
    Value kwargs = Value::new_dict();
    Value caller_value = caller ? *caller : Value::undefined("No caller defined");
    for (auto& [key, value] : args.keyword) {
        bool matched = false;
        for (size_t i = 0; i < s.params.size(); ++i)
            if (s.params[i].name == key) {
                if (bound[i]) runtime_error(line, "macro '" + m.name + "' got multiple values for argument '" + key + "'");
                scope->vars[key] = value;
                bound[i] = true;
                matched = true;
            }
        if (matched) continue;
        if (key == "caller" && s.uses_caller) {
            caller_value = value;
            continue;
        }
        if (!s.uses_kwargs) runtime_error(line, "macro '" + m.name + "' takes no keyword argument '" + key + "'");
        kwargs.dict->set(Value::from_string(key), value);
    }
    for (size_t i = 0; i < s.params.size(); ++i) {
        if (bound[i]) continue;
        if (s.params[i].default_value) scope->vars[s.params[i].name] = eval(*s.params[i].default_value, scope);
        else scope->vars[s.params[i].name] = Value::undefined("parameter '" + s.params[i].name + "' was not provided");
    }
    if (s.uses_varargs) {
        std::vector<Value> extra;
        for (size_t i = s.params.size(); i < args.positional.size(); ++i) extra.push_back(args.positional[i]);
        scope->vars["varargs"] = Value::new_list(std::move(extra), true);
    }
    if (s.uses_kwargs) scope->vars["kwargs"] = kwargs;
    if (s.uses_caller || caller) scope->vars["caller"] = caller_value;
    std::string out;
    exec_body(s.body, scope, out);
    return Value::from_string(std::move(out));
}

Value Interpreter::call(const Value& callee, CallArgs& args, int line) {
    args.line = line;
    if (callee.is_undefined()) undefined_error(callee, line);
    if (callee.kind != Kind::callable) runtime_error(line, std::string("'") + callee.type_name() + "' object is not callable");
    return callee.callable->call(*this, args);
}

Value Interpreter::apply_filter(const std::string& name, const Value& subject, CallArgs& args, int line) {
    args.line = line;
    return run_filter(*this, name, subject, args);
}

bool Interpreter::apply_test(const std::string& name, const Value& subject, CallArgs& args, int line) {
    args.line = line;
    return run_test(*this, name, subject, args);
}

void Interpreter::collect_args(const Expr& e, std::shared_ptr<Scope>& scope, CallArgs& args) {
    args.line = e.line;
    for (const auto& a : e.items) args.positional.push_back(eval(*a, scope));
    if (e.dyn_args) {
        Value extra = eval(*e.dyn_args, scope);
        for (auto& v : iterate(extra, e.line)) args.positional.push_back(std::move(v));
    }
    for (const auto& k : e.keywords) args.keyword.emplace_back(k.name, eval(*k.value, scope));
    if (e.dyn_kwargs) {
        Value extra = eval(*e.dyn_kwargs, scope);
        if (!extra.is_dict()) runtime_error(e.line, "argument after ** must be a mapping");
        for (auto& [k, v] : extra.dict->items) {
            if (!k.is_string()) runtime_error(e.line, "keywords must be strings");
            args.keyword.emplace_back(k.text, v);
        }
    }
}

Value Interpreter::eval(const Expr& e, std::shared_ptr<Scope>& scope) {
    NestingGuard guard(*this, e.line);
    switch (e.kind) {
        case ExprKind::literal: return e.value;
        case ExprKind::name: return lookup(e.name, scope);
        case ExprKind::getattr: return get_attr(eval(*e.a, scope), e.name, e.line);
        case ExprKind::getitem: {
            Value obj = eval(*e.a, scope);
            if (e.b->kind == ExprKind::slice) {
                const Expr& sl = *e.b;
                Value none = Value::none();
                Value start = sl.a ? eval(*sl.a, scope) : none;
                Value stop = sl.b ? eval(*sl.b, scope) : none;
                Value step = sl.c ? eval(*sl.c, scope) : none;
                Value out = slice_of(obj, start, stop, step, e.line);
                if (out.is_list()) charge(out.list->items.size(), e.line);
                return out;
            }
            return get_item(obj, eval(*e.b, scope), e.line);
        }
        case ExprKind::slice: runtime_error(e.line, "a slice outside of a subscript");
        case ExprKind::call: {
            Value callee = eval(*e.a, scope);
            CallArgs args;
            collect_args(e, scope, args);
            return call(callee, args, e.line);
        }
        case ExprKind::filter: {
            Value subject = eval(*e.a, scope);
            CallArgs args;
            collect_args(e, scope, args);
            return apply_filter(e.name, subject, args, e.line);
        }
        case ExprKind::test: {
            Value subject = eval(*e.a, scope);
            CallArgs args;
            collect_args(e, scope, args);
            return Value::from_bool(apply_test(e.name, subject, args, e.line));
        }
        case ExprKind::neg: return negate(eval(*e.a, scope), e.line, true);
        case ExprKind::pos: return negate(eval(*e.a, scope), e.line, false);
        case ExprKind::not_: return Value::from_bool(!eval(*e.a, scope).truthy());
        case ExprKind::binary: {
            if (e.name == "and") {
                Value l = eval(*e.a, scope);
                return l.truthy() ? eval(*e.b, scope) : l;
            }
            if (e.name == "or") {
                Value l = eval(*e.a, scope);
                return l.truthy() ? l : eval(*e.b, scope);
            }
            Value l = eval(*e.a, scope);
            Value r = eval(*e.b, scope);
            return binary_op(*this, e.name, l, r, e.line);
        }
        case ExprKind::concat: {
            std::string out;
            for (const auto& item : e.items) {
                out += python_str(eval(*item, scope));
                check_size(out.size(), e.line);
            }
            return Value::from_string(std::move(out));
        }
        case ExprKind::compare: {
            Value left = eval(*e.items[0], scope);
            for (size_t i = 0; i < e.ops.size(); ++i) {
                Value right = eval(*e.items[i + 1], scope);
                if (!compare_op(e.ops[i], left, right, e.line)) return Value::from_bool(false);
                left = std::move(right);
            }
            return Value::from_bool(true);
        }
        case ExprKind::cond: {
            if (eval(*e.b, scope).truthy()) return eval(*e.a, scope);
            if (e.c) return eval(*e.c, scope);
            return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                    " evaluated to false and no else section was defined.");
        }
        case ExprKind::list:
        case ExprKind::tuple: {
            charge(e.items.size(), e.line);
            std::vector<Value> items;
            items.reserve(e.items.size());
            for (const auto& item : e.items) items.push_back(eval(*item, scope));
            return Value::new_list(std::move(items), e.kind == ExprKind::tuple);
        }
        case ExprKind::dict: {
            charge(e.items.size(), e.line);
            Value d = Value::new_dict();
            for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
                Value k = eval(*e.items[i], scope);
                if ((k.is_list() && !k.tuple) || k.is_dict() || k.is_undefined())
                    runtime_error(e.line, std::string("unhashable type: '") + k.type_name() + "'");
                d.dict->set(std::move(k), eval(*e.items[i + 1], scope));
            }
            return d;
        }
    }
    runtime_error(e.line, "unknown expression");
}

}  // namespace strata::chat
