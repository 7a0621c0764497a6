// jinja2's builtin filters (jinja2/filters.py), with its argument names and defaults. The few
// jinja2 has and strata does not implement are Status::unsupported naming the filter.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_error.hpp"
#include "chat/jinja_eval.hpp"
#include "chat/jinja_json.hpp"
#include "chat/jinja_ops.hpp"

namespace strata::chat {

namespace {

const std::set<std::string>& implemented() {
    static const std::set<std::string> names = {
        "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
        "first", "float", "forceescape", "format", "indent", "int", "items", "join", "last", "length", "list",
        "lower", "map", "max", "min", "reject", "rejectattr", "replace", "reverse", "round", "safe", "select",
        "selectattr", "sort", "string", "sum", "title", "tojson", "trim", "unique", "upper", "wordcount"};
    return names;
}
const std::set<std::string>& not_implemented() {
    static const std::set<std::string> names = {"filesizeformat", "groupby", "pprint", "random", "slice",
                                                "striptags", "truncate", "urlencode", "urlize", "wordwrap",
                                                "xmlattr"};
    return names;
}

Value str_value(std::string s, bool safe = false) { return Value::from_string(std::move(s), safe); }

// soft_str: a str (Markup included) stays as it is, anything else goes through str().
Value soft_str(const Value& v) { return v.is_string() ? v : str_value(python_str(v)); }

Value lower_if_str(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return str_value(py_lower(v.text));
    return v;
}

// jinja2's make_attrgetter: "a.b.0" looks up each part with getitem (digits as ints).
Value attribute_path(const Value& item, const std::string& path, int line) {
    Value cur = item;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        Value key = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })
                        ? Value::from_int(std::stoll(part))
                        : str_value(part);
        cur = get_item(cur, key, line);
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

Value attribute_of(const Value& item, const Value* attribute, int line) {
    if (!attribute || attribute->is_none()) return item;
    if (attribute->kind == Kind::integer) return get_item(item, *attribute, line);
    return attribute_path(item, python_str(*attribute), line);
}

std::vector<Value> sorted_values(std::vector<Value> items, bool reverse, bool case_sensitive, const Value* attribute,
                                 int line) {
    std::vector<std::pair<Value, Value>> keyed;
    for (auto& v : items) keyed.emplace_back(lower_if_str(attribute_of(v, attribute, line), case_sensitive), v);
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        return reverse ? less_than(b.first, a.first, line) : less_than(a.first, b.first, line);
    });
    std::vector<Value> out;
    for (auto& kv : keyed) out.push_back(std::move(kv.second));
    return out;
}

bool parse_python_int(std::string s, int64_t& out) {
    s = py_strip(s, std::nullopt, true, true);
    std::string digits;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
            std::isdigit(static_cast<unsigned char>(s[i + 1])))
            continue;
        digits += s[i];
    }
    if (digits.empty()) return false;
    size_t i = (digits[0] == '-' || digits[0] == '+') ? 1 : 0;
    if (i >= digits.size()) return false;
    for (size_t k = i; k < digits.size(); ++k)
        if (!std::isdigit(static_cast<unsigned char>(digits[k]))) return false;
    errno = 0;
    long long v = std::strtoll(digits.c_str(), nullptr, 10);
    if (errno == ERANGE) return false;
    out = v;
    return true;
}

bool parse_python_float(const std::string& text, double& out) {
    std::string s = py_strip(text, std::nullopt, true, true);
    std::string t;
    for (char c : s)
        if (c != '_') t += c;
    if (t.empty()) return false;
    std::string low = py_lower(t);
    std::string body = (low[0] == '-' || low[0] == '+') ? low.substr(1) : low;
    if (body == "inf" || body == "infinity" || body == "nan") {
        out = body == "nan" ? std::nan("") : HUGE_VAL;
        if (low[0] == '-') out = -out;
        return true;
    }
    for (char c : body)
        if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == '+' || c == '-')) return false;
    char* end = nullptr;
    out = std::strtod(t.c_str(), &end);
    return end && *end == '\0';
}

Value do_round(const Value& v, int64_t precision, const std::string& method, int line) {
    if (method != "common" && method != "ceil" && method != "floor")
        runtime_error(line, "method must be common, ceil or floor");
    if (!v.is_number()) runtime_error(line, std::string("type ") + v.type_name() + " doesn't define __round__ method");
    const bool integral = v.kind != Kind::floating;
    if (method == "common") {
        if (integral) return Value::from_int(v.integer);  // round(int, n) stays an int
        double x = v.number, scale = std::pow(10.0, static_cast<double>(precision));
        double y = x * scale;
        double r = std::nearbyint(y);  // round half to even, as Python's round
        if (std::fabs(y - std::trunc(y)) != 0.5) r = std::round(y);
        return Value::from_float(r / scale);
    }
    double x = integral ? static_cast<double>(v.integer) : v.number;
    double scale = std::pow(10.0, static_cast<double>(precision));
    return Value::from_float((method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
}

std::string do_indent(const Value& subject, const Value& width, bool first, bool blank) {
    std::string indention = width.is_string() ? width.text : std::string(static_cast<size_t>(std::max<int64_t>(0, width.integer)), ' ');
    std::string s = python_str(subject) + "\n";  // jinja2's quirk for splitlines
    auto lines = py_splitlines(s, false);
    std::string rv;
    if (blank) {
        for (size_t i = 0; i < lines.size(); ++i) {
            if (i) rv += "\n" + indention;
            rv += lines[i];
        }
    } else {
        rv = lines.empty() ? "" : lines[0];
        if (lines.size() > 1) {
            rv += "\n";
            for (size_t i = 1; i < lines.size(); ++i) {
                if (i > 1) rv += "\n";
                if (!lines[i].empty()) rv += indention;
                rv += lines[i];
            }
        }
    }
    if (first) rv = indention + rv;
    return rv;
}

bool is_word_cp(uint32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           (c >= 0xAA && !py_isspace(c) && !(c >= 0x2000 && c <= 0x2BFF) && !(c >= 0x3000 && c <= 0x303F) &&
            !(c >= 0xFF00 && c <= 0xFF0F) && c != 0xAB && c != 0xBB && c != 0xB7 && c != 0xBF && c != 0xD7 && c != 0xF7);
}

Value select_or_reject(Interpreter& in, const Value& subject, CallArgs& args, bool select, bool by_attribute) {
    const int line = args.line;
    std::vector<Value> pos = args.positional;
    std::string attr;
    if (by_attribute) {
        if (pos.empty()) runtime_error(line, "Missing parameter for attribute name");
        attr = python_str(pos[0]);
        pos.erase(pos.begin());
    }
    std::string test_name;
    if (!pos.empty()) {
        test_name = python_str(pos[0]);
        pos.erase(pos.begin());
        if (!test_known(test_name)) unsupported_error(line, "the test '" + test_name + "' is not supported");
    }
    std::vector<Value> out;
    for (const auto& item : iterate(subject, line)) {
        in.charge(1, line);
        Value v = by_attribute ? attribute_path(item, attr, line) : item;
        bool ok;
        if (test_name.empty()) {
            ok = v.truthy();
        } else {
            CallArgs targs;
            targs.positional = pos;
            targs.keyword = args.keyword;
            targs.line = line;
            ok = in.apply_test(test_name, v, targs, line);
        }
        if (ok == select) out.push_back(item);
    }
    return Value::new_list(std::move(out));
}

Value run(Interpreter& in, const std::string& name, const Value& subject, CallArgs& args) {
    const int line = args.line;
    ArgReader r(args, "the filter '" + name + "'");
    if (name == "abs") {
        r.done();
        if (subject.kind == Kind::floating) return Value::from_float(std::fabs(subject.number));
        if (subject.is_number()) return negate(subject, line, subject.integer < 0);
        runtime_error(line, std::string("bad operand type for abs(): '") + subject.type_name() + "'");
    }
    if (name == "attr") {
        const Value* n = r.get(0, "name");
        r.done();
        if (!n) runtime_error(line, "attr() missing 1 required positional argument: 'name'");
        // getattr only: unlike `.name`, a dict key is not an attribute.
        if (subject.is_undefined()) undefined_error(subject, line);
        Value out;
        if (python_attribute(subject, python_str(*n), out)) return out;
        return Value::undefined("'" + std::string(subject.type_name()) + " object' has no attribute '" + python_str(*n) + "'");
    }
    if (name == "batch") {
        const Value* count = r.get(0, "linecount");
        Value fill = r.get_or(1, "fill_with", Value::none());
        r.done();
        if (!count || count->kind != Kind::integer || count->integer <= 0)
            runtime_error(line, "batch: linecount must be a positive integer");
        std::vector<Value> out, tmp;
        for (const auto& item : iterate(subject, line)) {
            if (static_cast<int64_t>(tmp.size()) == count->integer) {
                out.push_back(Value::new_list(std::move(tmp)));
                tmp.clear();
            }
            tmp.push_back(item);
        }
        if (!tmp.empty()) {
            if (!fill.is_none())
                while (static_cast<int64_t>(tmp.size()) < count->integer) tmp.push_back(fill);
            out.push_back(Value::new_list(std::move(tmp)));
        }
        return Value::new_list(std::move(out));
    }
    if (name == "capitalize" || name == "lower" || name == "upper" || name == "title") {
        r.done();
        Value s = soft_str(subject);
        if (name == "capitalize") return str_value(py_capitalize(s.text), s.safe);
        if (name == "lower") return str_value(py_lower(s.text), s.safe);
        if (name == "upper") return str_value(py_upper(s.text), s.safe);
        // jinja2's own title: item[0].upper() + item[1:].lower() for the items of a split on
        // runs of [-\s({\[<] (the separators kept).
        auto is_sep = [](uint32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c); };
        std::string out;
        std::vector<uint32_t> cps = utf8_decode(s.text);
        for (size_t i = 0; i < cps.size();) {
            if (is_sep(cps[i])) {
                utf8_append(out, cps[i++]);
                continue;
            }
            size_t j = i;
            while (j < cps.size() && !is_sep(cps[j])) ++j;
            out += py_capitalize(utf8_encode(cps, i, j));
            i = j;
        }
        return str_value(out, s.safe);
    }
    if (name == "center") {
        Value w = r.get_or(0, "width", Value::from_int(80));
        r.done();
        CallArgs a;
        a.positional = {w};
        a.line = line;
        Value m;
        Value s = soft_str(subject);
        python_attribute(s, "center", m);
        return in.call(m, a, line);
    }
    if (name == "count" || name == "length") {
        r.done();
        return Value::from_int(length_of(subject, line));
    }
    if (name == "default" || name == "d") {
        Value fallback = r.get_or(0, "default_value", str_value(""));
        bool boolean = r.get_or(1, "boolean", Value::from_bool(false)).truthy();
        r.done();
        if (subject.is_undefined() || (boolean && !subject.truthy())) return fallback;
        return subject;
    }
    if (name == "dictsort") {
        bool case_sensitive = r.get_or(0, "case_sensitive", Value::from_bool(false)).truthy();
        std::string by = python_str(r.get_or(1, "by", str_value("key")));
        bool reverse = r.get_or(2, "reverse", Value::from_bool(false)).truthy();
        r.done();
        if (subject.is_undefined()) undefined_error(subject, line);
        if (!subject.is_dict()) runtime_error(line, "dictsort: the value is not a dict");
        if (by != "key" && by != "value") runtime_error(line, "You can only sort by either \"key\" or \"value\"");
        std::vector<Value> items;
        for (const auto& [k, v] : subject.dict->items) items.push_back(Value::new_list({k, v}, true));
        Value index = Value::from_int(by == "key" ? 0 : 1);
        return Value::new_list(sorted_values(std::move(items), reverse, case_sensitive, &index, line));
    }
    if (name == "escape" || name == "e" || name == "forceescape") {
        r.done();
        if (subject.is_string() && subject.safe && name != "forceescape") return subject;
        return str_value(escape_html(python_str(subject)), true);
    }
    if (name == "first" || name == "last") {
        r.done();
        auto items = iterate(subject, line);
        if (items.empty()) return Value::undefined(std::string("No ") + name + " item, sequence was empty.");
        return name == "first" ? items.front() : items.back();
    }
    if (name == "float") {
        Value fallback = r.get_or(0, "default", Value::from_float(0.0));
        r.done();
        if (subject.kind == Kind::floating) return subject;
        if (subject.is_number()) return Value::from_float(static_cast<double>(subject.integer));
        double d;
        if (subject.is_string() && parse_python_float(subject.text, d)) return Value::from_float(d);
        return fallback;
    }
    if (name == "int") {
        Value fallback = r.get_or(0, "default", Value::from_int(0));
        Value base = r.get_or(1, "base", Value::from_int(10));
        r.done();
        if (base.kind != Kind::integer || base.integer != 10)
            unsupported_error(line, "the filter 'int' with a base other than 10 is not supported");
        if (subject.kind == Kind::integer || subject.kind == Kind::boolean) return Value::from_int(subject.integer);
        if (subject.kind == Kind::floating) {
            if (!std::isfinite(subject.number)) runtime_error(line, "cannot convert float infinity or NaN to integer");
            return Value::from_int(static_cast<int64_t>(subject.number));
        }
        if (subject.is_string()) {
            int64_t i;
            if (parse_python_int(subject.text, i)) return Value::from_int(i);
            double d;
            if (parse_python_float(subject.text, d)) {
                if (!std::isfinite(d)) runtime_error(line, "cannot convert float infinity or NaN to integer");
                return Value::from_int(static_cast<int64_t>(d));
            }
        }
        return fallback;
    }
    if (name == "format") {
        std::vector<Value> pos = args.positional;
        if (!pos.empty() && !args.keyword.empty())
            runtime_error(line, "can't handle positional and keyword arguments at the same time");
        Value packed;
        if (!args.keyword.empty()) {
            packed = Value::new_dict();
            for (auto& kv : args.keyword) packed.dict->set(str_value(kv.first), kv.second);
        } else {
            packed = Value::new_list(pos, true);
        }
        Value s = soft_str(subject);
        return str_value(percent_format(s.text, packed, line), s.safe);
    }
    if (name == "indent") {
        Value width = r.get_or(0, "width", Value::from_int(4));
        bool first = r.get_or(1, "first", Value::from_bool(false)).truthy();
        bool blank = r.get_or(2, "blank", Value::from_bool(false)).truthy();
        r.done();
        if (!width.is_string() && width.kind != Kind::integer) runtime_error(line, "indent: width must be an int or a str");
        std::string out = do_indent(subject, width, first, blank);
        in.check_size(out.size(), line);
        return str_value(out, subject.is_string() && subject.safe);
    }
    if (name == "items") {
        r.done();
        if (subject.is_undefined()) return Value::new_list();
        if (!subject.is_dict()) runtime_error(line, "Can only get item pairs from a mapping.");
        std::vector<Value> out;
        for (const auto& [k, v] : subject.dict->items) out.push_back(Value::new_list({k, v}, true));
        return Value::new_list(std::move(out));
    }
    if (name == "join") {
        std::string sep = python_str(r.get_or(0, "d", str_value("")));
        const Value* attribute = r.get(1, "attribute");
        r.done();
        std::string out;
        bool first = true;
        for (const auto& item : iterate(subject, line)) {
            if (!first) out += sep;
            first = false;
            out += python_str(attribute_of(item, attribute, line));
            in.check_size(out.size(), line);
        }
        return str_value(out);
    }
    if (name == "list") {
        r.done();
        if (subject.is_undefined()) return Value::new_list();
        return Value::new_list(iterate(subject, line));
    }
    if (name == "map") {
        std::vector<Value> items = iterate(subject, line);
        std::vector<Value> out;
        const Value* attribute = nullptr;
        Value fallback;
        bool has_default = false;
        for (auto& kv : args.keyword) {
            if (kv.first == "attribute") attribute = &kv.second;
            else if (kv.first == "default") {
                fallback = kv.second;
                has_default = true;
            }
        }
        if (attribute) {
            if (!args.positional.empty())
                runtime_error(line, "map: positional arguments and 'attribute' at the same time");
            for (auto& kv : args.keyword)
                if (kv.first != "attribute" && kv.first != "default")
                    runtime_error(line, "Unexpected keyword argument '" + kv.first + "'");
            for (const auto& item : items) {
                Value v = attribute_of(item, attribute, line);
                out.push_back(v.is_undefined() && has_default ? fallback : v);
            }
            return Value::new_list(std::move(out));
        }
        if (args.positional.empty()) runtime_error(line, "map requires a filter argument");
        std::string fname = python_str(args.positional[0]);
        if (!filter_known(fname)) unsupported_error(line, "the filter '" + fname + "' is not supported");
        for (const auto& item : items) {
            CallArgs fa;
            fa.positional.assign(args.positional.begin() + 1, args.positional.end());
            fa.keyword = args.keyword;
            fa.line = line;
            in.charge(1, line);
            out.push_back(in.apply_filter(fname, item, fa, line));
        }
        return Value::new_list(std::move(out));
    }
    if (name == "max" || name == "min") {
        bool case_sensitive = r.get_or(0, "case_sensitive", Value::from_bool(false)).truthy();
        const Value* attribute = r.get(1, "attribute");
        r.done();
        auto items = iterate(subject, line);
        if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
        size_t best = 0;
        for (size_t i = 1; i < items.size(); ++i) {
            Value a = lower_if_str(attribute_of(items[i], attribute, line), case_sensitive);
            Value b = lower_if_str(attribute_of(items[best], attribute, line), case_sensitive);
            if (name == "max" ? less_than(b, a, line) : less_than(a, b, line)) best = i;
        }
        return items[best];
    }
    if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
        return select_or_reject(in, subject, args, name == "select" || name == "selectattr",
                                name == "selectattr" || name == "rejectattr");
    if (name == "replace") {
        const Value* old = r.get(0, "old");
        const Value* repl = r.get(1, "new");
        Value count = r.get_or(2, "count", Value::none());
        r.done();
        if (!old || !repl) runtime_error(line, "replace() missing required arguments 'old' and 'new'");
        int64_t n = count.is_none() ? -1 : count.integer;
        std::string out = py_replace(python_str(subject), python_str(*old), python_str(*repl), n);
        in.check_size(out.size(), line);
        return str_value(out);
    }
    if (name == "reverse") {
        r.done();
        if (subject.is_string()) {
            auto cps = utf8_decode(subject.text);
            std::reverse(cps.begin(), cps.end());
            return str_value(utf8_encode(cps, 0, cps.size()), subject.safe);
        }
        auto items = iterate(subject, line);
        std::reverse(items.begin(), items.end());
        return Value::new_list(std::move(items));
    }
    if (name == "round") {
        Value precision = r.get_or(0, "precision", Value::from_int(0));
        std::string method = python_str(r.get_or(1, "method", str_value("common")));
        r.done();
        return do_round(subject, precision.integer, method, line);
    }
    if (name == "safe") {
        r.done();
        return str_value(python_str(subject), true);
    }
    if (name == "sort") {
        bool reverse = r.get_or(0, "reverse", Value::from_bool(false)).truthy();
        bool case_sensitive = r.get_or(1, "case_sensitive", Value::from_bool(false)).truthy();
        const Value* attribute = r.get(2, "attribute");
        r.done();
        return Value::new_list(sorted_values(iterate(subject, line), reverse, case_sensitive, attribute, line));
    }
    if (name == "string") {
        r.done();
        return soft_str(subject);
    }
    if (name == "sum") {
        const Value* attribute = r.get(0, "attribute");
        Value total = r.get_or(1, "start", Value::from_int(0));
        r.done();
        for (const auto& item : iterate(subject, line)) total = binary_op(in, "+", total, attribute_of(item, attribute, line), line);
        return total;
    }
    if (name == "tojson") {
        Value indent = r.get_or(0, "indent", Value::none());
        r.done();
        JsonDumpOptions o;
        if (indent.kind == Kind::integer) o.indent = static_cast<int>(std::clamp<int64_t>(indent.integer, -1, 1024));
        else if (indent.is_string()) o.indent_text = indent.text, o.indent = 0;
        else if (!indent.is_none()) runtime_error(line, "tojson: indent must be an int or a str");
        if (indent.kind == Kind::integer && indent.integer < 0) o.indent = 0;  // json.dumps: negative is 0
        std::string out = html_safe_json(subject, o);
        in.check_size(out.size(), line);
        return str_value(out, true);
    }
    if (name == "trim") {
        const Value* chars = r.get(0, "chars");
        r.done();
        Value s = soft_str(subject);
        std::optional<std::string> set;
        if (chars && !chars->is_none()) set = python_str(*chars);
        return str_value(py_strip(s.text, set, true, true), s.safe);
    }
    if (name == "unique") {
        bool case_sensitive = r.get_or(0, "case_sensitive", Value::from_bool(false)).truthy();
        const Value* attribute = r.get(1, "attribute");
        r.done();
        std::vector<Value> seen, out;
        for (const auto& item : iterate(subject, line)) {
            Value key = lower_if_str(attribute_of(item, attribute, line), case_sensitive);
            in.charge(seen.size() / 16 + 1, line);
            if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
            seen.push_back(key);
            out.push_back(item);
        }
        return Value::new_list(std::move(out));
    }
    if (name == "wordcount") {
        r.done();
        int64_t n = 0;
        bool in_word = false;
        for (uint32_t cp : utf8_decode(python_str(subject))) {
            bool w = is_word_cp(cp);
            if (w && !in_word) ++n;
            in_word = w;
        }
        return Value::from_int(n);
    }
    unsupported_error(line, "the filter '" + name + "' is not supported");
}

}  // namespace

bool filter_known(const std::string& name) { return implemented().count(name) > 0; }
bool filter_in_jinja2(const std::string& name) { return implemented().count(name) || not_implemented().count(name); }

Value run_filter(Interpreter& in, const std::string& name, const Value& subject, CallArgs& args) {
    if (!implemented().count(name)) {
        if (not_implemented().count(name)) unsupported_error(args.line, "the filter '" + name + "' is not supported");
        unsupported_error(args.line, "the filter '" + name + "' is not supported (jinja2 has no such filter)");
    }
    return run(in, name, subject, args);
}

}  // namespace strata::chat
