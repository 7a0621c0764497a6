// The Python methods templates call on values: str.startswith/split/strip/..., dict.get/items/
// ..., list.append/pop/...; a name Python has and strata does not is Status::unsupported.
#include <algorithm>
#include <set>

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_error.hpp"
#include "chat/jinja_eval.hpp"
#include "chat/jinja_json.hpp"
#include "chat/jinja_ops.hpp"

namespace strata::chat {

namespace {

const std::set<std::string>& str_attributes() {
    static const std::set<std::string> names = {
        "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format",
        "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier",
        "islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower",
        "lstrip", "maketrans", "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex",
        "rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "swapcase",
        "title", "translate", "upper", "zfill"};
    return names;
}
const std::set<std::string>& list_attributes() {
    static const std::set<std::string> names = {"append", "clear", "copy", "count", "extend", "index",
                                                "insert", "pop", "remove", "reverse", "sort"};
    return names;
}
const std::set<std::string>& tuple_attributes() {
    static const std::set<std::string> names = {"count", "index"};
    return names;
}
const std::set<std::string>& dict_attributes() {
    static const std::set<std::string> names = {"clear", "copy", "fromkeys", "get", "items", "keys",
                                                "pop", "popitem", "setdefault", "update", "values"};
    return names;
}

const std::string& str_arg(const Value* v, const std::string& what, int line) {
    if (!v || !v->is_string())
        runtime_error(line, what + " argument must be str, not " + std::string(v ? v->type_name() : "nothing"));
    return v->text;
}

std::optional<std::string> optional_str(const Value* v, const std::string& what, int line) {
    if (!v || v->is_none()) return std::nullopt;
    return str_arg(v, what, line);
}

int64_t int_arg(const Value* v, int64_t fallback, const std::string& what, int line) {
    if (!v || v->is_none()) return fallback;
    if (v->kind != Kind::integer && v->kind != Kind::boolean)
        runtime_error(line, what + ": an integer is required, not " + std::string(v->type_name()));
    return v->integer;
}

// Code point offsets [start, end) of str.find/count/startswith arguments, clamped as Python does.
std::pair<size_t, size_t> cp_range(size_t n, const Value* start, const Value* end, int line) {
    auto fix = [&](const Value* v, int64_t dflt) {
        int64_t i = int_arg(v, dflt, "slice index", line);
        if (i < 0) i += static_cast<int64_t>(n);
        return static_cast<size_t>(std::clamp<int64_t>(i, 0, static_cast<int64_t>(n)));
    };
    return {fix(start, 0), fix(end, static_cast<int64_t>(n))};
}

int64_t find_cp(const std::vector<uint32_t>& hay, const std::vector<uint32_t>& needle, size_t b, size_t e, bool last) {
    if (needle.size() > e - std::min(b, e) || b > e) return -1;
    if (!last) {
        for (size_t i = b; i + needle.size() <= e; ++i)
            if (std::equal(needle.begin(), needle.end(), hay.begin() + static_cast<long>(i))) return static_cast<int64_t>(i);
    } else {
        for (size_t i = e - needle.size() + 1; i-- > b;)
            if (std::equal(needle.begin(), needle.end(), hay.begin() + static_cast<long>(i))) return static_cast<int64_t>(i);
    }
    return -1;
}

Value str_list(const std::vector<std::string>& parts) {
    std::vector<Value> items;
    for (const auto& p : parts) items.push_back(Value::from_string(p));
    return Value::new_list(std::move(items));
}

bool all_cps(std::string_view s, bool (*pred)(uint32_t)) {
    auto cps = utf8_decode(s);
    if (cps.empty()) return false;
    return std::all_of(cps.begin(), cps.end(), pred);
}

bool cp_alpha(uint32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= 0xC0 && c != 0xD7 && c != 0xF7 && !py_isspace(c) && !(c >= 0x2000 && c <= 0x2BFF) &&
            !(c >= 0x3000 && c <= 0x303F) && !(c >= 0xFF00 && c <= 0xFF20) && c < 0x1F000);
}
bool cp_digit(uint32_t c) { return c >= '0' && c <= '9'; }
bool cp_alnum(uint32_t c) { return cp_alpha(c) || cp_digit(c); }

// str.format with automatic and explicit field numbers and names, !r/!s conversions and no
// format spec beyond an empty one.
std::string str_format(const std::string& fmt, CallArgs& args, int line) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if (c == '}' ) {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
                out += '}';
                ++i;
                continue;
            }
            runtime_error(line, "Single '}' encountered in format string");
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        size_t close = fmt.find('}', i);
        if (close == std::string::npos) runtime_error(line, "Single '{' encountered in format string");
        std::string field = fmt.substr(i + 1, close - i - 1);
        i = close;
        char conversion = 0;
        if (size_t bang = field.find('!'); bang != std::string::npos) {
            conversion = bang + 1 < field.size() ? field[bang + 1] : 0;
            field = field.substr(0, bang);
        }
        if (field.find(':') != std::string::npos || field.find('.') != std::string::npos ||
            field.find('[') != std::string::npos)
            unsupported_error(line, "str.format with a format spec or attribute access is not supported");
        const Value* v = nullptr;
        if (field.empty()) {
            if (auto_index >= args.positional.size()) runtime_error(line, "Replacement index out of range for positional args tuple");
            v = &args.positional[auto_index++];
        } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
            size_t k = std::stoul(field);
            if (k >= args.positional.size()) runtime_error(line, "Replacement index out of range for positional args tuple");
            v = &args.positional[k];
        } else {
            for (auto& kv : args.keyword)
                if (kv.first == field) v = &kv.second;
            if (!v) runtime_error(line, "KeyError: '" + field + "'");
        }
        out += conversion == 'r' ? python_repr(*v) : python_str(*v);
    }
    return out;
}

Value call_str_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
    const int line = args.line;
    const std::string& s = self.text;
    ArgReader r(args, "str." + name + "()");
    auto result = [&](std::string text) {
        in.check_size(text.size(), line);
        return Value::from_string(std::move(text), self.safe);
    };
    if (name == "startswith" || name == "endswith") {
        const Value* prefix = r.get(0, "\x01");
        const Value* start = r.get(1, "\x01");
        const Value* end = r.get(2, "\x01");
        r.done();
        if (!prefix) runtime_error(line, name + "() takes at least 1 argument (0 given)");
        std::vector<Value> options = prefix->is_list() && prefix->tuple ? prefix->list->items : std::vector<Value>{*prefix};
        auto cps = utf8_decode(s);
        auto [b, e] = cp_range(cps.size(), start, end, line);
        for (const auto& o : options) {
            if (!o.is_string())
                runtime_error(line, name + " first arg must be str or a tuple of str, not " + o.type_name());
            auto p = utf8_decode(o.text);
            if (b > e || p.size() > e - b) continue;
            if (name == "startswith" ? std::equal(p.begin(), p.end(), cps.begin() + static_cast<long>(b))
                                     : std::equal(p.begin(), p.end(), cps.begin() + static_cast<long>(e - p.size())))
                return Value::from_bool(true);
        }
        return Value::from_bool(false);
    }
    if (name == "split" || name == "rsplit") {
        auto sep = optional_str(r.get(0, "sep"), name, line);
        int64_t maxsplit = int_arg(r.get(1, "maxsplit"), -1, name, line);
        r.done();
        in.charge(s.size() / 64, line);
        return str_list(py_split(s, sep, maxsplit, name == "rsplit", line));
    }
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        auto chars = optional_str(r.get(0, "\x01"), name, line);
        r.done();
        return result(py_strip(s, chars, name != "rstrip", name != "lstrip"));
    }
    if (name == "lower" || name == "upper" || name == "title" || name == "capitalize" || name == "casefold" ||
        name == "swapcase") {
        r.done();
        if (name == "lower" || name == "casefold") return result(py_lower(s));
        if (name == "upper") return result(py_upper(s));
        if (name == "title") return result(py_title(s));
        if (name == "capitalize") return result(py_capitalize(s));
        std::string out;
        for (uint32_t cp : utf8_decode(s)) {
            std::string one;
            utf8_append(one, cp);
            std::string low = py_lower(one);
            out += low != one ? low : py_upper(one);
        }
        return result(out);
    }
    if (name == "replace") {
        const std::string& old = str_arg(r.get(0, "\x01"), "replace() first", line);
        const std::string& repl = str_arg(r.get(1, "\x01"), "replace() second", line);
        int64_t count = int_arg(r.get(2, "count"), -1, "replace", line);
        r.done();
        std::string o = old, n = repl;
        if (self.safe) {  // Markup.replace escapes its arguments
            o = escape_html(o);
            n = escape_html(n);
        }
        return result(py_replace(s, o, n, count));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
        const std::string& sub = str_arg(r.get(0, "\x01"), name + "()", line);
        const Value* start = r.get(1, "\x01");
        const Value* end = r.get(2, "\x01");
        r.done();
        auto cps = utf8_decode(s);
        auto needle = utf8_decode(sub);
        auto [b, e] = cp_range(cps.size(), start, end, line);
        if (name == "count") {
            if (b > e) return Value::from_int(0);
            if (needle.empty()) return Value::from_int(static_cast<int64_t>(e - b + 1));
            int64_t n = 0;
            for (size_t i = b; i + needle.size() <= e;) {
                if (std::equal(needle.begin(), needle.end(), cps.begin() + static_cast<long>(i))) {
                    ++n;
                    i += needle.size();
                } else {
                    ++i;
                }
            }
            return Value::from_int(n);
        }
        int64_t at = find_cp(cps, needle, b, e, name[0] == 'r');
        if (at < 0 && (name == "index" || name == "rindex")) runtime_error(line, "substring not found");
        return Value::from_int(at);
    }
    if (name == "join") {
        const Value* it = r.get(0, "\x01");
        r.done();
        if (!it) runtime_error(line, "join() takes exactly one argument (0 given)");
        std::string out;
        size_t k = 0;
        for (const auto& item : iterate(*it, line)) {
            if (!item.is_string())
                runtime_error(line, "sequence item " + std::to_string(k) + ": expected str instance, " +
                                        item.type_name() + " found");
            if (k++) out += s;
            out += item.text;
            in.check_size(out.size(), line);
        }
        return result(out);
    }
    if (name == "format") return result(str_format(s, args, line));
    if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") {
        r.done();
        return Value::from_bool(all_cps(s, cp_digit));
    }
    if (name == "isalpha" || name == "isalnum" || name == "isspace" || name == "isascii") {
        r.done();
        if (name == "isascii") return Value::from_bool(is_ascii(s));
        return Value::from_bool(all_cps(s, name == "isalpha" ? cp_alpha : name == "isalnum" ? cp_alnum : py_isspace));
    }
    if (name == "islower" || name == "isupper") {
        r.done();
        const bool lower = name == "islower";
        bool any_cased = false;
        for (uint32_t cp : utf8_decode(s)) {
            std::string one;
            utf8_append(one, cp);
            std::string lo = py_lower(one), up = py_upper(one);
            if (lo == up) continue;
            any_cased = true;
            if ((lower && one != lo) || (!lower && one != up)) return Value::from_bool(false);
        }
        return Value::from_bool(any_cased);
    }
    if (name == "ljust" || name == "rjust" || name == "center" || name == "zfill") {
        int64_t width = int_arg(r.get(0, "\x01"), 0, name, line);
        std::string fill = name == "zfill" ? "0" : " ";
        if (name != "zfill")
            if (const Value* f = r.get(1, "\x01")) fill = str_arg(f, name + "() fill character", line);
        r.done();
        int64_t len = static_cast<int64_t>(utf8_length(s));
        if (width <= len) return result(s);
        if (width > static_cast<int64_t>(in.limits().max_output_bytes)) in.check_size(static_cast<size_t>(width), line);
        int64_t pad = width - len;
        auto rep = [&](int64_t n) {
            std::string o;
            for (int64_t i = 0; i < n; ++i) o += fill;
            return o;
        };
        if (name == "ljust") return result(s + rep(pad));
        if (name == "rjust") return result(rep(pad) + s);
        if (name == "zfill") {
            if (!s.empty() && (s[0] == '-' || s[0] == '+')) return result(s.substr(0, 1) + rep(pad) + s.substr(1));
            return result(rep(pad) + s);
        }
        int64_t left = pad / 2 + (pad & width & 1);
        return result(rep(left) + s + rep(pad - left));
    }
    if (name == "splitlines") {
        bool keep = r.get_or(0, "keepends", Value::from_bool(false)).truthy();
        r.done();
        return str_list(py_splitlines(s, keep));
    }
    if (name == "partition" || name == "rpartition") {
        const std::string& sep = str_arg(r.get(0, "\x01"), name + "()", line);
        r.done();
        if (sep.empty()) runtime_error(line, "empty separator");
        size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
        std::vector<Value> parts;
        if (at == std::string::npos) {
            parts = name == "partition"
                        ? std::vector<Value>{Value::from_string(s), Value::from_string(""), Value::from_string("")}
                        : std::vector<Value>{Value::from_string(""), Value::from_string(""), Value::from_string(s)};
        } else {
            parts = {Value::from_string(s.substr(0, at)), Value::from_string(sep),
                     Value::from_string(s.substr(at + sep.size()))};
        }
        return Value::new_list(std::move(parts), true);
    }
    if (name == "removeprefix" || name == "removesuffix") {
        const std::string& a = str_arg(r.get(0, "\x01"), name + "()", line);
        r.done();
        if (name == "removeprefix") return result(s.compare(0, a.size(), a) == 0 ? s.substr(a.size()) : s);
        if (s.size() >= a.size() && s.compare(s.size() - a.size(), a.size(), a) == 0) return result(s.substr(0, s.size() - a.size()));
        return result(s);
    }
    unsupported_error(line, "the method str." + name + " is not supported");
}

void check_list_size(Interpreter& in, size_t n, int line) {
    in.charge(1, line);
    if (n > (size_t{1} << 24)) runtime_error(line, "a list grew beyond 16777216 items");
}

Value call_list_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
    const int line = args.line;
    auto& items = self.list->items;
    ArgReader r(args, "list." + name + "()");
    if (name == "append") {
        const Value* v = r.get(0, "\x01");
        r.done();
        if (!v) runtime_error(line, "append() takes exactly one argument (0 given)");
        check_list_size(in, items.size() + 1, line);
        items.push_back(*v);
        return Value::none();
    }
    if (name == "extend") {
        const Value* v = r.get(0, "\x01");
        r.done();
        if (!v) runtime_error(line, "extend() takes exactly one argument (0 given)");
        auto more = iterate(*v, line);
        in.charge(more.size(), line);
        check_list_size(in, items.size() + more.size(), line);
        items.insert(items.end(), more.begin(), more.end());
        return Value::none();
    }
    if (name == "insert") {
        int64_t i = int_arg(r.get(0, "\x01"), 0, "insert", line);
        const Value* v = r.get(1, "\x01");
        r.done();
        if (!v) runtime_error(line, "insert expected 2 arguments");
        int64_t n = static_cast<int64_t>(items.size());
        if (i < 0) i = std::max<int64_t>(0, i + n);
        i = std::min(i, n);
        check_list_size(in, items.size() + 1, line);
        items.insert(items.begin() + static_cast<long>(i), *v);
        return Value::none();
    }
    if (name == "pop") {
        int64_t i = int_arg(r.get(0, "\x01"), -1, "pop", line);
        r.done();
        if (items.empty()) runtime_error(line, "pop from empty list");
        int64_t n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) runtime_error(line, "pop index out of range");
        Value v = items[static_cast<size_t>(i)];
        items.erase(items.begin() + static_cast<long>(i));
        return v;
    }
    if (name == "remove" || name == "index" || name == "count") {
        const Value* v = r.get(0, "\x01");
        r.done();
        if (!v) runtime_error(line, name + "() takes exactly one argument (0 given)");
        if (name == "count")
            return Value::from_int(std::count_if(items.begin(), items.end(), [&](const Value& x) { return equals(x, *v); }));
        for (size_t i = 0; i < items.size(); ++i)
            if (equals(items[i], *v)) {
                if (name == "index") return Value::from_int(static_cast<int64_t>(i));
                items.erase(items.begin() + static_cast<long>(i));
                return Value::none();
            }
        runtime_error(line, name == "index" ? python_repr(*v) + " is not in list" : "list.remove(x): x not in list");
    }
    if (name == "reverse") {
        r.done();
        std::reverse(items.begin(), items.end());
        return Value::none();
    }
    if (name == "copy") {
        r.done();
        in.charge(items.size(), line);
        return Value::new_list(items);
    }
    if (name == "clear") {
        r.done();
        items.clear();
        return Value::none();
    }
    if (name == "sort") {
        bool reverse = r.get_or(SIZE_MAX, "reverse", Value::from_bool(false)).truthy();
        r.done();
        std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
            return reverse ? less_than(b, a, line) : less_than(a, b, line);
        });
        return Value::none();
    }
    unsupported_error(line, "the method list." + name + " is not supported");
}

Value call_dict_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
    const int line = args.line;
    auto& d = *self.dict;
    ArgReader r(args, "dict." + name + "()");
    auto key_arg = [&]() -> const Value& {
        const Value* k = r.get(0, "\x01");
        if (!k) runtime_error(line, name + " expected at least 1 argument, got 0");
        if (k->is_list() && !k->tuple) runtime_error(line, "unhashable type: 'list'");
        if (k->is_dict()) runtime_error(line, "unhashable type: 'dict'");
        return *k;
    };
    if (name == "get") {
        const Value& k = key_arg();
        Value fallback = r.get_or(1, "\x01", Value::none());
        r.done();
        const Value* v = d.find(k);
        return v ? *v : fallback;
    }
    if (name == "items" || name == "keys" || name == "values") {
        r.done();
        in.charge(d.items.size(), line);
        std::vector<Value> out;
        for (const auto& [k, v] : d.items) {
            if (name == "items") out.push_back(Value::new_list({k, v}, true));
            else out.push_back(name == "keys" ? k : v);
        }
        return Value::new_list(std::move(out));
    }
    if (name == "pop") {
        const Value& k = key_arg();
        const Value* fallback = r.get(1, "\x01");
        r.done();
        if (const Value* v = d.find(k)) {
            Value out = *v;
            d.erase(k);
            return out;
        }
        if (fallback) return *fallback;
        runtime_error(line, "KeyError: " + python_repr(k));
    }
    if (name == "setdefault") {
        const Value& k = key_arg();
        Value fallback = r.get_or(1, "\x01", Value::none());
        r.done();
        if (const Value* v = d.find(k)) return *v;
        d.set(k, fallback);
        return fallback;
    }
    if (name == "update") {
        const Value* other = r.get(0, "\x01");
        if (other) {
            if (!other->is_dict()) unsupported_error(line, "dict.update with a non-dict argument is not supported");
            auto copy = other->dict->items;
            for (auto& kv : copy) d.set(kv.first, kv.second);
        }
        for (auto& kv : args.keyword) d.set(Value::from_string(kv.first), kv.second);
        args.keyword.clear();
        r.done();
        return Value::none();
    }
    if (name == "copy") {
        r.done();
        Value out = Value::new_dict();
        out.dict->items = d.items;
        return out;
    }
    if (name == "clear") {
        r.done();
        d.items.clear();
        return Value::none();
    }
    if (name == "popitem") {
        r.done();
        if (d.items.empty()) runtime_error(line, "popitem(): dictionary is empty");
        auto kv = d.items.back();
        d.items.pop_back();
        return Value::new_list({kv.first, kv.second}, true);
    }
    unsupported_error(line, "the method dict." + name + " is not supported");
}

struct BoundMethod : Callable {
    Value self;
    std::string name;
    BoundMethod(Value s, std::string n) : self(std::move(s)), name(std::move(n)) {}
    Value call(Interpreter& in, CallArgs& args) override {
        switch (self.kind) {
            case Kind::string: return call_str_method(in, self, name, args);
            case Kind::list: return call_list_method(in, self, name, args);
            case Kind::dict: return call_dict_method(in, self, name, args);
            default: unsupported_error(args.line, "the method " + std::string(self.type_name()) + "." + name + " is not supported");
        }
    }
    std::string describe() const override {
        return "built-in method " + name + " of " + self.type_name() + " object";
    }
};

}  // namespace

bool python_attribute(const Value& obj, const std::string& name, Value& out) {
    const std::set<std::string>* names = nullptr;
    switch (obj.kind) {
        case Kind::string: names = &str_attributes(); break;
        case Kind::list: names = obj.tuple ? &tuple_attributes() : &list_attributes(); break;
        case Kind::dict: names = &dict_attributes(); break;
        case Kind::ns: {
            const Value* v = obj.dict->find(std::string_view(name));
            if (!v) return false;
            out = *v;
            return true;
        }
        case Kind::callable: return obj.callable->attribute(name, out);
        default: return false;
    }
    if (!names->count(name)) return false;
    out = Value::from_callable(std::make_shared<BoundMethod>(obj, name));
    return true;
}

}  // namespace strata::chat
