// The Jinja interpreter: renders a parsed Template with jinja2's semantics (Undefined, scoping
// of for loops and macros, loop controls) inside limits, since the template comes from a
// downloaded file: output size, steps (loop iterations, statements, copied elements) and
// macro call depth.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "chat/jinja_ast.hpp"
#include "chat/jinja_value.hpp"

namespace strata::chat {

struct RenderLimits {
    size_t max_output_bytes = size_t{64} << 20;  // any one string, the output included
    uint64_t max_steps = 10'000'000;
    int max_call_depth = 100;
    // Statements and expressions being evaluated inside one another (macro calls included):
    // bounds the native stack the interpreter uses.
    int max_nesting = 500;
};

struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;
};

class Interpreter {
public:
    explicit Interpreter(RenderLimits limits = {});

    // Renders with `variables` (a dict) as the template's context; the globals (range,
    // namespace, dict, cycler, joiner, raise_exception, strftime_now) sit behind them.
    std::string render(const Template& tpl, const Value& variables);

    // For builtins that call back: filters through map/select, callables, limits.
    Value call(const Value& callee, CallArgs& args, int line);
    Value apply_filter(const std::string& name, const Value& subject, CallArgs& args, int line);
    bool apply_test(const std::string& name, const Value& subject, CallArgs& args, int line);
    // Counts work against max_steps; throws when the budget is spent.
    void charge(uint64_t steps, int line);
    // Refuses a string longer than max_output_bytes.
    void check_size(size_t bytes, int line) const;
    const RenderLimits& limits() const { return limits_; }

    // Runs a macro body (used by the Macro callable).
    struct MacroDef;
    Value run_macro(const MacroDef& m, CallArgs& args, const Value* caller);
    // loop(children) inside a recursive for loop.
    Value run_recursive_loop(struct LoopState& loop, const Value& iterable, int line);

private:
    // Every scope of a render, emptied when it ends: a macro holds the scope it was defined in,
    // which holds the macro.
    std::shared_ptr<Scope> new_scope();
    std::vector<std::weak_ptr<Scope>> scopes_;

    RenderLimits limits_;
    uint64_t steps_ = 0;
    int call_depth_ = 0;
    int nesting_ = 0;
    struct NestingGuard;
    std::shared_ptr<Scope> globals_;

    enum class Flow { normal, break_, continue_ };

    Flow exec_body(const Body& body, std::shared_ptr<Scope>& scope, std::string& out);
    Flow exec(const Stmt& s, std::shared_ptr<Scope>& scope, std::string& out);
    void exec_for(const Stmt& s, std::shared_ptr<Scope>& scope, std::string& out, const Value& iterable,
                  int depth);
    void assign(const Target& t, const Value& v, std::shared_ptr<Scope>& scope, int line);
    Value eval(const Expr& e, std::shared_ptr<Scope>& scope);
    Value lookup(const std::string& name, const std::shared_ptr<Scope>& scope) const;
    void collect_args(const Expr& e, std::shared_ptr<Scope>& scope, CallArgs& args);
    Value apply_filter_chain(const std::vector<ExprPtr>& filters, Value v, std::shared_ptr<Scope>& scope);
    void append(std::string& out, std::string_view text, int line);

    friend struct LoopState;
};

}  // namespace strata::chat
