#include "chat/jinja_ops.hpp"

#include <cmath>
#include <limits>

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_error.hpp"
#include "chat/jinja_eval.hpp"
#include "chat/jinja_json.hpp"

namespace strata::chat {

namespace {

double as_double(const Value& v) { return v.kind == Kind::floating ? v.number : static_cast<double>(v.integer); }
bool is_int_like(const Value& v) { return v.kind == Kind::integer || v.kind == Kind::boolean; }

[[noreturn]] void operand_error(const std::string& op, const Value& a, const Value& b, int line) {
    runtime_error(line, std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" +
                            b.type_name() + "'");
}

[[noreturn]] void overflow(int line) { unsupported_error(line, "integer arithmetic beyond 64 bits is not supported"); }

template <typename Op>
int64_t checked(Op op, int64_t a, int64_t b, int line) {
    int64_t r = 0;
    if (op(a, b, &r)) overflow(line);
    return r;
}
const auto add_op = [](int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); };
const auto sub_op = [](int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); };
const auto mul_op = [](int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); };

int64_t floor_div(int64_t a, int64_t b, int line) {
    if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow(line);
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

double float_mod(double a, double b) {
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    if (r == 0) r = std::copysign(0.0, b);
    return r;
}

Value repeat(Interpreter& in, const Value& seq, int64_t times, int line) {
    if (times < 0) times = 0;
    if (seq.kind == Kind::string) {
        const size_t total = seq.text.size() * static_cast<size_t>(times);
        if (times && total / static_cast<size_t>(times) != seq.text.size()) overflow(line);
        in.check_size(total, line);
        in.charge(total / 1024, line);
        std::string out;
        out.reserve(total);
        for (int64_t i = 0; i < times; ++i) out += seq.text;
        return Value::from_string(std::move(out), seq.safe);
    }
    const auto& items = seq.list->items;
    const uint64_t total = static_cast<uint64_t>(items.size()) * static_cast<uint64_t>(times);
    if (times && total / static_cast<uint64_t>(times) != items.size()) overflow(line);
    in.charge(total, line);
    std::vector<Value> out;
    out.reserve(total);
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
    return Value::new_list(std::move(out), seq.tuple);
}

int64_t normalize_index(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

}  // namespace

void undefined_error(const Value& u, int line) {
    runtime_error(line, u.text.empty() ? std::string("the value is undefined") : u.text);
}

std::string escape_html(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '\'': out += "&#39;"; break;
            case '"': out += "&#34;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string to_text(const Value& v) { return python_str(v); }

Value binary_op(Interpreter& in, const std::string& op, const Value& a, const Value& b, int line) {
    if (a.is_undefined()) undefined_error(a, line);
    if (b.is_undefined()) undefined_error(b, line);
    const bool nums = a.is_number() && b.is_number();
    const bool ints = nums && is_int_like(a) && is_int_like(b);
    if (op == "+") {
        if (ints) {
            return Value::from_int(checked(add_op, a.integer, b.integer, line));
        }
        if (nums) return Value::from_float(as_double(a) + as_double(b));
        if (a.is_string() && b.is_string()) {
            // markupsafe: joining Markup with a plain str escapes the plain side.
            std::string left = a.safe || !b.safe ? a.text : escape_html(a.text);
            std::string right = b.safe || !a.safe ? b.text : escape_html(b.text);
            in.check_size(left.size() + right.size(), line);
            in.charge((left.size() + right.size()) / 4096, line);
            return Value::from_string(left + right, a.safe || b.safe);
        }
        if (a.is_list() && b.is_list() && a.tuple == b.tuple) {
            in.charge(a.list->items.size() + b.list->items.size(), line);
            std::vector<Value> items = a.list->items;
            items.insert(items.end(), b.list->items.begin(), b.list->items.end());
            return Value::new_list(std::move(items), a.tuple);
        }
        if (a.is_string() && !a.safe)
            runtime_error(line, std::string("can only concatenate str (not \"") + b.type_name() + "\") to str");
        if (a.is_list() && !a.tuple)
            runtime_error(line, std::string("can only concatenate list (not \"") + b.type_name() + "\") to list");
        operand_error("+", a, b, line);
    }
    if (op == "-") {
        if (ints) {
            return Value::from_int(checked(sub_op, a.integer, b.integer, line));
        }
        if (nums) return Value::from_float(as_double(a) - as_double(b));
        operand_error("-", a, b, line);
    }
    if (op == "*") {
        if (ints) {
            return Value::from_int(checked(mul_op, a.integer, b.integer, line));
        }
        if (nums) return Value::from_float(as_double(a) * as_double(b));
        if ((a.is_string() || a.is_list()) && is_int_like(b)) return repeat(in, a, b.integer, line);
        if ((b.is_string() || b.is_list()) && is_int_like(a)) return repeat(in, b, a.integer, line);
        operand_error("*", a, b, line);
    }
    if (op == "/") {
        if (!nums) operand_error("/", a, b, line);
        if (as_double(b) == 0) runtime_error(line, "division by zero");
        return Value::from_float(as_double(a) / as_double(b));
    }
    if (op == "//") {
        if (!nums) operand_error("//", a, b, line);
        if (as_double(b) == 0) runtime_error(line, ints ? "integer division or modulo by zero" : "float floor division by zero");
        if (ints) return Value::from_int(floor_div(a.integer, b.integer, line));
        // CPython's float_floor_div.
        const double x = as_double(a), y = as_double(b);
        const double mod = std::fmod(x, y);
        double div = (x - mod) / y;
        if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1.0;
        double floordiv;
        if (div != 0) {
            floordiv = std::floor(div);
            if (div - floordiv > 0.5) floordiv += 1.0;
        } else {
            floordiv = std::copysign(0.0, x / y);
        }
        return Value::from_float(floordiv);
    }
    if (op == "%") {
        if (a.is_string()) {
            std::string s = percent_format(a.text, b, line);
            in.check_size(s.size(), line);
            return Value::from_string(std::move(s), a.safe);
        }
        if (!nums) operand_error("%", a, b, line);
        if (as_double(b) == 0) runtime_error(line, ints ? "integer division or modulo by zero" : "float modulo");
        if (ints) return Value::from_int(floor_mod(a.integer, b.integer));
        return Value::from_float(float_mod(as_double(a), as_double(b)));
    }
    if (op == "**") {
        if (!nums) operand_error("** or pow()", a, b, line);
        if (ints && b.integer >= 0) {
            int64_t result = 1, base = a.integer, e = b.integer;
            while (e > 0) {
                if (e & 1) result = checked(mul_op, result, base, line);
                e >>= 1;
                if (e) base = checked(mul_op, base, base, line);
            }
            return Value::from_int(result);
        }
        if (as_double(a) == 0 && as_double(b) < 0)
            runtime_error(line, "0.0 cannot be raised to a negative power");
        return Value::from_float(std::pow(as_double(a), as_double(b)));
    }
    runtime_error(line, "unknown operator " + op);
}

Value negate(const Value& v, int line, bool minus) {
    if (v.is_undefined()) undefined_error(v, line);
    if (v.kind == Kind::floating) return Value::from_float(minus ? -v.number : v.number);
    if (is_int_like(v)) {
        if (minus && v.integer == std::numeric_limits<int64_t>::min()) overflow(line);
        return Value::from_int(minus ? -v.integer : v.integer);
    }
    runtime_error(line, std::string("bad operand type for unary ") + (minus ? "-" : "+") + ": '" + v.type_name() + "'");
}

bool less_than(const Value& a, const Value& b, int line) {
    if (a.is_undefined()) undefined_error(a, line);
    if (b.is_undefined()) undefined_error(b, line);
    if (a.is_number() && b.is_number()) {
        if (is_int_like(a) && is_int_like(b)) return a.integer < b.integer;
        return as_double(a) < as_double(b);
    }
    if (a.is_string() && b.is_string()) return a.text < b.text;  // UTF-8 byte order is code point order
    if (a.is_list() && b.is_list() && a.tuple == b.tuple) {
        const auto& x = a.list->items;
        const auto& y = b.list->items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equals(x[i], y[i])) continue;
            return less_than(x[i], y[i], line);
        }
        return x.size() < y.size();
    }
    runtime_error(line, std::string("'<' not supported between instances of '") + a.type_name() + "' and '" +
                            b.type_name() + "'");
}

bool compare_op(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "<") return less_than(a, b, line);
    if (op == ">") return less_than(b, a, line);
    if (op == "<=") return less_than(a, b, line) || equals(a, b);
    if (op == ">=") return less_than(b, a, line) || equals(a, b);
    if (op == "in") return contains(b, a, line);
    if (op == "notin") return !contains(b, a, line);
    runtime_error(line, "unknown comparison " + op);
}

bool contains(const Value& container, const Value& item, int line) {
    switch (container.kind) {
        case Kind::undefined: return false;  // Undefined iterates as empty
        case Kind::string:
            if (!item.is_string())
                runtime_error(line, std::string("'in <string>' requires string as left operand, not ") + item.type_name());
            return container.text.find(item.text) != std::string::npos;
        case Kind::list:
            for (const auto& x : container.list->items)
                if (equals(x, item)) return true;
            return false;
        case Kind::dict:
            if (item.is_list() && !item.tuple) runtime_error(line, "unhashable type: 'list'");
            if (item.is_dict()) runtime_error(line, "unhashable type: 'dict'");
            return container.dict->find(item) != nullptr;
        default:
            runtime_error(line, std::string("argument of type '") + container.type_name() + "' is not iterable");
    }
}

std::vector<Value> iterate(const Value& v, int line) {
    switch (v.kind) {
        case Kind::undefined: return {};
        case Kind::list: return v.list->items;
        case Kind::dict: {
            std::vector<Value> keys;
            keys.reserve(v.dict->items.size());
            for (const auto& kv : v.dict->items) keys.push_back(kv.first);
            return keys;
        }
        case Kind::string: {
            std::vector<Value> chars;
            for (uint32_t cp : utf8_decode(v.text)) {
                std::string s;
                utf8_append(s, cp);
                chars.push_back(Value::from_string(std::move(s), v.safe));
            }
            return chars;
        }
        default: runtime_error(line, std::string("'") + v.type_name() + "' object is not iterable");
    }
}

int64_t length_of(const Value& v, int line) {
    switch (v.kind) {
        case Kind::undefined: return 0;
        case Kind::string: return static_cast<int64_t>(utf8_length(v.text));
        case Kind::list: return static_cast<int64_t>(v.list->items.size());
        case Kind::dict: return static_cast<int64_t>(v.dict->items.size());
        default: runtime_error(line, std::string("object of type '") + v.type_name() + "' has no len()");
    }
}

namespace {

std::string no_attribute(const Value& obj, const std::string& name) {
    return "'" + std::string(obj.kind == Kind::dict ? "dict" : obj.type_name()) + " object' has no attribute '" + name + "'";
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name, int line) {
    if (obj.is_undefined()) undefined_error(obj, line);
    if (name.size() >= 2 && name[0] == '_' && name[1] == '_')
        unsupported_error(line, "the attribute '" + name + "' is not supported");
    Value method;
    if (python_attribute(obj, name, method)) return method;
    if (obj.kind == Kind::dict)
        if (const Value* v = obj.dict->find(std::string_view(name))) return *v;
    if (obj.kind == Kind::ns) {
        if (const Value* v = obj.dict->find(std::string_view(name))) return *v;
    }
    return Value::undefined(no_attribute(obj, name));
}

Value get_item(const Value& obj, const Value& key, int line) {
    if (obj.is_undefined()) undefined_error(obj, line);
    switch (obj.kind) {
        case Kind::dict: {
            if (key.is_list() && !key.tuple) runtime_error(line, "unhashable type: 'list'");
            if (const Value* v = obj.dict->find(key)) return *v;
            break;
        }
        case Kind::list:
        case Kind::string: {
            if (is_int_like(key)) {
                const bool str = obj.kind == Kind::string;
                std::vector<uint32_t> cps;
                if (str && !is_ascii(obj.text)) cps = utf8_decode(obj.text);
                const int64_t n = str ? (cps.empty() ? static_cast<int64_t>(obj.text.size()) : static_cast<int64_t>(cps.size()))
                                      : static_cast<int64_t>(obj.list->items.size());
                const int64_t i = normalize_index(key.integer, n);
                if (i < 0 || i >= n)
                    return Value::undefined(std::string(str ? "string" : obj.tuple ? "tuple" : "list") + " index out of range");
                if (!str) return obj.list->items[static_cast<size_t>(i)];
                if (cps.empty()) return Value::from_string(std::string(1, obj.text[static_cast<size_t>(i)]), obj.safe);
                std::string s;
                utf8_append(s, cps[static_cast<size_t>(i)]);
                return Value::from_string(std::move(s), obj.safe);
            }
            break;
        }
        default: break;
    }
    if (key.is_string()) {
        Value method;
        if (python_attribute(obj, key.text, method)) return method;
        if (obj.kind == Kind::ns)
            if (const Value* v = obj.dict->find(std::string_view(key.text))) return *v;
    }
    if (obj.kind == Kind::dict) return Value::undefined("'dict object' has no attribute " + python_repr(key));
    return Value::undefined("'" + std::string(obj.type_name()) + " object' has no attribute " + python_repr(key));
}

Value slice_of(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v, int line) {
    if (obj.is_undefined()) undefined_error(obj, line);
    if (obj.kind != Kind::string && obj.kind != Kind::list)
        return Value::undefined("'" + std::string(obj.type_name()) + "' object is not subscriptable");
    auto bound = [&](const Value& v) -> const Value* {
        if (v.is_none() || v.is_undefined()) return nullptr;
        if (!is_int_like(v)) runtime_error(line, "slice indices must be integers or None");
        return &v;
    };
    const Value* start = bound(start_v);
    const Value* stop = bound(stop_v);
    const Value* stepp = bound(step_v);
    const int64_t step = stepp ? stepp->integer : 1;
    if (step == 0) runtime_error(line, "slice step cannot be zero");
    std::vector<uint32_t> cps;
    const bool str = obj.kind == Kind::string;
    if (str) cps = utf8_decode(obj.text);
    const int64_t n = str ? static_cast<int64_t>(cps.size()) : static_cast<int64_t>(obj.list->items.size());
    // Python's PySlice_AdjustIndices.
    auto adjust = [&](const Value* v, int64_t dflt) {
        if (!v) return dflt;
        int64_t i = v->integer;
        if (i < 0) {
            i += n;
            if (i < 0) i = step < 0 ? -1 : 0;
        } else if (i >= n) {
            i = step < 0 ? n - 1 : n;
        }
        return i;
    };
    const int64_t b = adjust(start, step < 0 ? n - 1 : 0);
    const int64_t e = adjust(stop, step < 0 ? -1 : n);
    std::vector<int64_t> idx;
    if (step > 0)
        for (int64_t i = b; i < e; i += step) idx.push_back(i);
    else
        for (int64_t i = b; i > e; i += step) idx.push_back(i);
    if (str) {
        std::string out;
        for (int64_t i : idx) utf8_append(out, cps[static_cast<size_t>(i)]);
        return Value::from_string(std::move(out), obj.safe);
    }
    std::vector<Value> out;
    out.reserve(idx.size());
    for (int64_t i : idx) out.push_back(obj.list->items[static_cast<size_t>(i)]);
    return Value::new_list(std::move(out), obj.tuple);
}

std::string percent_format(const std::string& fmt, const Value& args, int line) {
    std::vector<Value> items;
    const Value* mapping = nullptr;
    if (args.is_list() && args.tuple) items = args.list->items;
    else if (args.is_dict()) mapping = &args;
    else items.push_back(args);
    size_t next_arg = 0;
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (++i >= fmt.size()) runtime_error(line, "incomplete format");
        const Value* arg = nullptr;
        if (fmt[i] == '(') {
            size_t close = fmt.find(')', i);
            if (close == std::string::npos || !mapping) runtime_error(line, "format requires a mapping");
            arg = mapping->dict->find(std::string_view(fmt).substr(i + 1, close - i - 1));
            if (!arg) runtime_error(line, "KeyError " + fmt.substr(i + 1, close - i - 1));
            i = close + 1;
        }
        std::string flags;
        while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) flags += fmt[i++];
        std::string width, precision;
        while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) width += fmt[i++];
        if (i < fmt.size() && fmt[i] == '.') {
            ++i;
            precision = "0";
            while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) precision += fmt[i++];
        }
        if (i >= fmt.size()) runtime_error(line, "incomplete format");
        const char conv = fmt[i];
        if (conv == '%') {
            out += '%';
            continue;
        }
        if (!arg) {
            if (mapping && items.empty()) runtime_error(line, "format requires a mapping");
            if (next_arg >= items.size()) runtime_error(line, "not enough arguments for format string");
            arg = &items[next_arg++];
        }
        std::string piece;
        if (conv == 's' || conv == 'r' || conv == 'a') {
            piece = conv == 's' ? python_str(*arg) : python_repr(*arg);
            if (!precision.empty()) piece = utf8_encode(utf8_decode(piece), 0, std::min(utf8_decode(piece).size(), static_cast<size_t>(std::stoul(precision))));
        } else if (conv == 'd' || conv == 'i' || conv == 'f' || conv == 'F' || conv == 'e' || conv == 'g' || conv == 'x' ||
                   conv == 'X' || conv == 'o') {
            if (!arg->is_number())
                runtime_error(line, std::string("%") + conv + " format: a real number is required, not " + arg->type_name());
            std::string spec = "%" + flags + width + (precision.empty() ? "" : "." + precision);
            char buf[512];
            if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'o') {
                long long iv = arg->kind == Kind::floating ? static_cast<long long>(arg->number) : arg->integer;
                std::snprintf(buf, sizeof buf, (spec + "ll" + (conv == 'i' ? 'd' : conv)).c_str(), iv);
            } else {
                double dv = arg->kind == Kind::floating ? arg->number : static_cast<double>(arg->integer);
                std::snprintf(buf, sizeof buf, (spec + conv).c_str(), dv);
            }
            out += buf;
            continue;
        } else {
            unsupported_error(line, std::string("the format conversion '%") + conv + "' is not supported");
        }
        size_t w = width.empty() ? 0 : std::stoul(width);
        size_t len = utf8_length(piece);
        if (len < w) {
            if (flags.find('-') != std::string::npos) piece += std::string(w - len, ' ');
            else piece = std::string(w - len, ' ') + piece;
        }
        out += piece;
    }
    if (!mapping && next_arg < items.size()) runtime_error(line, "not all arguments converted during string formatting");
    return out;
}

const Value* ArgReader::get(size_t index, const char* name) {
    if (used_keyword_.size() < args_.keyword.size()) used_keyword_.resize(args_.keyword.size(), false);
    const Value* found = nullptr;
    if (index < args_.positional.size()) {
        found = &args_.positional[index];
        used_positional_ = std::max(used_positional_, index + 1);
    }
    for (size_t k = 0; k < args_.keyword.size(); ++k)
        if (args_.keyword[k].first == name) {
            if (found) runtime_error(args_.line, what_ + " got multiple values for argument '" + name + "'");
            used_keyword_[k] = true;
            found = &args_.keyword[k].second;
        }
    return found;
}

Value ArgReader::get_or(size_t index, const char* name, Value fallback) {
    const Value* v = get(index, name);
    return v ? *v : std::move(fallback);
}

std::vector<Value> ArgReader::rest(size_t index) {
    std::vector<Value> out;
    for (size_t i = index; i < args_.positional.size(); ++i) out.push_back(args_.positional[i]);
    used_positional_ = std::max(used_positional_, args_.positional.size());
    return out;
}

void ArgReader::done() {
    if (used_keyword_.size() < args_.keyword.size()) used_keyword_.resize(args_.keyword.size(), false);
    if (used_positional_ < args_.positional.size())
        runtime_error(args_.line, what_ + " takes at most " + std::to_string(used_positional_) + " positional argument(s), " +
                                      std::to_string(args_.positional.size()) + " given");
    for (size_t k = 0; k < args_.keyword.size(); ++k)
        if (!used_keyword_[k])
            runtime_error(args_.line, what_ + " got an unexpected keyword argument '" + args_.keyword[k].first + "'");
}

}  // namespace strata::chat
