// The syntax tree of a parsed Jinja template: expressions and statements, each with its line.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "chat/jinja_value.hpp"

namespace strata::chat {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
    literal,    // value
    name,       // name
    getattr,    // a.name
    getitem,    // a[b]
    slice,      // a[b:c:d] (args: start, stop, step; null parts are absent)
    call,       // a(args)
    filter,     // a | name(args)
    test,       // a is name(args)
    neg, pos, not_,
    binary,     // name: + - * / // % ** and or
    concat,     // a ~ b ~ c (items)
    compare,    // a op b op c (items: operands, ops: operators)
    cond,       // a if b else c (a, b, c; c may be null)
    list, tuple, dict,  // items (dict: key, value, key, value, ...)
};

struct Keyword {
    std::string name;
    ExprPtr value;
};

struct Expr {
    ExprKind kind;
    int line = 0;
    Value value;                 // literal
    std::string name;            // name / attribute / filter / test / operator
    ExprPtr a, b, c;             // operands
    std::vector<ExprPtr> items;  // call/filter/test arguments, list items, compare operands
    std::vector<Keyword> keywords;
    ExprPtr dyn_args, dyn_kwargs;  // *args, **kwargs
    std::vector<std::string> ops;  // compare
};

enum class StmtKind {
    text, output, if_, for_, set, set_block, macro, call_block, filter_block, break_, continue_, with,
};

struct MacroParam {
    std::string name;
    ExprPtr default_value;  // may be null
};

// An assignment target: a name, a tuple of names, or namespace.attribute.
struct Target {
    std::vector<std::string> names;  // one name, or the names of a tuple
    bool tuple = false;
    std::string attribute;           // ns.attribute: names[0] is the namespace
};

struct Stmt {
    StmtKind kind;
    int line = 0;
    std::string text;                      // text: the template data
    ExprPtr expr;                          // output / set value / for iterable / call block's call
    std::vector<std::pair<ExprPtr, Body>> branches;  // if / elif: condition and body
    Body body, else_body;
    Target target;                         // for / set
    ExprPtr loop_filter;                   // for ... if cond
    bool recursive = false;
    std::string name;                      // macro name
    std::vector<MacroParam> params;        // macro / call block parameters
    bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
    std::vector<ExprPtr> filters;          // set block / filter block: filter chain (a is null)
    std::vector<std::pair<Target, ExprPtr>> assignments;  // with
};

struct Template {
    Body body;
    // Every filter and test the template names, with its line: jinja2 refuses an unknown one
    // when it compiles the template, whether or not the rendering reaches it.
    std::vector<std::pair<std::string, int>> filters, tests;
};

}  // namespace strata::chat
