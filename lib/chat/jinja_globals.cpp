#include "chat/jinja_globals.hpp"

#include <ctime>
#include <functional>

#include "chat/jinja_error.hpp"
#include "chat/jinja_json.hpp"
#include "chat/jinja_ops.hpp"

namespace strata::chat {

namespace {

struct Builtin : Callable {
    std::string name;
    std::function<Value(Interpreter&, CallArgs&)> fn;
    Builtin(std::string n, std::function<Value(Interpreter&, CallArgs&)> f) : name(std::move(n)), fn(std::move(f)) {}
    Value call(Interpreter& in, CallArgs& args) override { return fn(in, args); }
    std::string describe() const override { return "built-in function " + name; }
};

Value builtin(const std::string& name, std::function<Value(Interpreter&, CallArgs&)> fn) {
    return Value::from_callable(std::make_shared<Builtin>(name, std::move(fn)));
}

int64_t int_argument(const Value& v, int line) {
    if (v.kind != Kind::integer && v.kind != Kind::boolean)
        runtime_error(line, std::string("'") + v.type_name() + "' object cannot be interpreted as an integer");
    return v.integer;
}

Value range_fn(Interpreter& in, CallArgs& args) {
    const int line = args.line;
    if (!args.keyword.empty()) runtime_error(line, "range() takes no keyword arguments");
    const auto& p = args.positional;
    if (p.empty() || p.size() > 3) runtime_error(line, "range expected 1 to 3 arguments, got " + std::to_string(p.size()));
    int64_t start = 0, stop, step = 1;
    if (p.size() == 1) {
        stop = int_argument(p[0], line);
    } else {
        start = int_argument(p[0], line);
        stop = int_argument(p[1], line);
        if (p.size() == 3) step = int_argument(p[2], line);
    }
    if (step == 0) runtime_error(line, "range() arg 3 must not be zero");
    uint64_t n = 0;
    if (step > 0 && start < stop) n = (static_cast<uint64_t>(stop - start) - 1) / static_cast<uint64_t>(step) + 1;
    if (step < 0 && start > stop) n = (static_cast<uint64_t>(start - stop) - 1) / static_cast<uint64_t>(-step) + 1;
    in.charge(n, line);  // refuses a range too long to materialize within the step budget
    std::vector<Value> items;
    items.reserve(n);
    for (uint64_t i = 0; i < n; ++i) items.push_back(Value::from_int(start + static_cast<int64_t>(i) * step));
    return Value::new_list(std::move(items));
}

// dict(*args, **kwargs) as Python builds it: a mapping or pairs, then the keywords.
void fill_dict(DictObj& d, CallArgs& args, const char* what) {
    if (args.positional.size() > 1) runtime_error(args.line, std::string(what) + " expected at most 1 argument");
    if (!args.positional.empty()) {
        const Value& src = args.positional[0];
        if (src.is_dict()) {
            for (const auto& kv : src.dict->items) d.set(kv.first, kv.second);
        } else {
            for (const auto& pair : iterate(src, args.line)) {
                auto kv = iterate(pair, args.line);
                if (kv.size() != 2) runtime_error(args.line, "dictionary update sequence element has the wrong length");
                d.set(kv[0], kv[1]);
            }
        }
    }
    for (auto& [k, v] : args.keyword) d.set(Value::from_string(k), v);
}

struct Cycler : Callable {
    std::vector<Value> items;
    size_t pos = 0;
    Value call(Interpreter&, CallArgs& args) override { runtime_error(args.line, "'Cycler' object is not callable"); }
    std::string describe() const override { return "Cycler"; }
    bool attribute(const std::string& name, Value& out) const override {
        auto* self = const_cast<Cycler*>(this);
        if (name == "current") {
            out = items[pos];
        } else if (name == "next") {
            out = builtin("next", [self](Interpreter&, CallArgs&) {
                Value v = self->items[self->pos];
                self->pos = (self->pos + 1) % self->items.size();
                return v;
            });
        } else if (name == "reset") {
            out = builtin("reset", [self](Interpreter&, CallArgs&) {
                self->pos = 0;
                return Value::none();
            });
        } else {
            return false;
        }
        return true;
    }
};

}  // namespace

std::shared_ptr<Scope> make_globals() {
    auto g = std::make_shared<Scope>();
    g->vars["range"] = builtin("range", range_fn);
    g->vars["namespace"] = builtin("namespace", [](Interpreter&, CallArgs& args) {
        Value ns = Value::new_namespace();
        fill_dict(*ns.dict, args, "namespace");
        return ns;
    });
    g->vars["dict"] = builtin("dict", [](Interpreter&, CallArgs& args) {
        Value d = Value::new_dict();
        fill_dict(*d.dict, args, "dict");
        return d;
    });
    g->vars["cycler"] = builtin("cycler", [](Interpreter&, CallArgs& args) {
        if (args.positional.empty()) runtime_error(args.line, "cycler() needs at least one item");
        auto c = std::make_shared<Cycler>();
        c->items = args.positional;
        return Value::from_callable(c);
    });
    g->vars["joiner"] = builtin("joiner", [](Interpreter&, CallArgs& args) {
        ArgReader r(args, "joiner()");
        std::string sep = python_str(r.get_or(0, "sep", Value::from_string(", ")));
        r.done();
        auto used = std::make_shared<bool>(false);
        return builtin("joiner", [sep, used](Interpreter&, CallArgs&) {
            if (!*used) {
                *used = true;
                return Value::from_string("");
            }
            return Value::from_string(sep);
        });
    });
    g->vars["lipsum"] = builtin("lipsum", [](Interpreter&, CallArgs& args) -> Value {
        unsupported_error(args.line, "the global 'lipsum' is not supported");
    });
    g->vars["raise_exception"] = builtin("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
        std::string message = args.positional.empty() ? std::string("raise_exception() called") : python_str(args.positional[0]);
        fail(Status::invalid_argument, message);
    });
    g->vars["strftime_now"] = builtin("strftime_now", [](Interpreter&, CallArgs& args) {
        if (args.positional.size() != 1 || !args.positional[0].is_string())
            runtime_error(args.line, "strftime_now(format) takes one string");
        std::time_t now = std::time(nullptr);
        std::tm local{};
        localtime_r(&now, &local);
        char buf[512];
        size_t n = std::strftime(buf, sizeof buf, args.positional[0].text.c_str(), &local);
        return Value::from_string(std::string(buf, n));
    });
    return g;
}

}  // namespace strata::chat
