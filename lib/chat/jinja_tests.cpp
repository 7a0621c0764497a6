// jinja2's builtin tests (jinja2/tests.py): `x is defined`, `x is string`, `x is divisibleby 3`.
#include <set>

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_error.hpp"
#include "chat/jinja_eval.hpp"
#include "chat/jinja_json.hpp"
#include "chat/jinja_ops.hpp"

namespace strata::chat {

namespace {

const std::set<std::string>& names() {
    static const std::set<std::string> n = {
        "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "filter",
        "float", "ge", "gt", "greaterthan", "in", "integer", "iterable", "le", "lessthan", "lower", "lt",
        "mapping", "ne", "none", "number", "odd", "sameas", "sequence", "string", "test", "true", "undefined",
        "upper", "==", "!=", "<", "<=", ">", ">="};
    return n;
}

bool same_object(const Value& a, const Value& b) {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case Kind::none:
        case Kind::undefined: return true;
        case Kind::boolean: return a.boolean == b.boolean;
        case Kind::integer: return a.integer == b.integer;
        case Kind::floating: return a.number == b.number;
        case Kind::string: return a.text == b.text;
        case Kind::list: return a.list == b.list;
        case Kind::dict:
        case Kind::ns: return a.dict == b.dict;
        case Kind::callable: return a.callable == b.callable;
    }
    return false;
}

}  // namespace

bool test_known(const std::string& name) { return names().count(name) > 0; }

bool run_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args) {
    const int line = args.line;
    ArgReader r(args, "the test '" + name + "'");
    auto other = [&]() -> Value {
        const Value* o = r.get(0, name == "divisibleby" ? "num" : name == "in" ? "seq" : "other");
        r.done();
        if (!o) runtime_error(line, "the test '" + name + "' needs an argument");
        return *o;
    };
    if (name == "defined" || name == "undefined") {
        r.done();
        return v.is_undefined() == (name == "undefined");
    }
    if (name == "none") return r.done(), v.is_none();
    if (name == "boolean") return r.done(), v.kind == Kind::boolean;
    if (name == "true") return r.done(), v.kind == Kind::boolean && v.boolean;
    if (name == "false") return r.done(), v.kind == Kind::boolean && !v.boolean;
    if (name == "integer") return r.done(), v.kind == Kind::integer;
    if (name == "float") return r.done(), v.kind == Kind::floating;
    if (name == "number") return r.done(), v.is_number();
    if (name == "string") return r.done(), v.is_string();
    if (name == "mapping") return r.done(), v.is_dict();
    if (name == "iterable")
        return r.done(), v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
    if (name == "sequence")
        return r.done(), v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
    if (name == "callable") return r.done(), v.kind == Kind::callable;
    if (name == "escaped") return r.done(), v.is_string() && v.safe;
    if (name == "lower" || name == "upper") {
        r.done();
        std::string s = python_str(v);
        Value method;
        python_attribute(Value::from_string(s), name == "lower" ? "islower" : "isupper", method);
        CallArgs none;
        none.line = line;
        return in.call(method, none, line).truthy();
    }
    if (name == "odd" || name == "even") {
        r.done();
        Value m = binary_op(in, "%", v, Value::from_int(2), line);
        return (m.kind == Kind::floating ? m.number == 1.0 : m.integer == 1) == (name == "odd");
    }
    if (name == "divisibleby") {
        Value n = other();
        Value m = binary_op(in, "%", v, n, line);
        return m.kind == Kind::floating ? m.number == 0 : m.integer == 0;
    }
    if (name == "eq" || name == "equalto" || name == "==") return equals(v, other());
    if (name == "ne" || name == "!=") return !equals(v, other());
    if (name == "lt" || name == "lessthan" || name == "<") return less_than(v, other(), line);
    if (name == "le" || name == "<=") return compare_op("<=", v, other(), line);
    if (name == "gt" || name == "greaterthan" || name == ">") return less_than(other(), v, line);
    if (name == "ge" || name == ">=") return compare_op(">=", v, other(), line);
    if (name == "in") return contains(other(), v, line);
    if (name == "sameas") return same_object(v, other());
    if (name == "filter") {
        r.done();
        return v.is_string() && filter_known(v.text);
    }
    if (name == "test") {
        r.done();
        return v.is_string() && test_known(v.text);
    }
    unsupported_error(line, "the test '" + name + "' is not supported");
}

}  // namespace strata::chat
