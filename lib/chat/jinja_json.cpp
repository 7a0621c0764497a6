#include "chat/jinja_json.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace strata::chat {

namespace {

void check_depth(int depth) {
    if (depth > kMaxValueDepth)
        fail(Status::invalid_argument, "a value nests deeper than " + std::to_string(kMaxValueDepth) + " levels");
}

// Python's str.isprintable, approximated for the ranges chat text meets: controls, the
// non-space separators, format characters, private use and non-characters print escaped.
bool printable(uint32_t cp) {
    if (cp < 0x20 || cp == 0x7F) return false;
    if (cp < 0x7F) return true;
    if (cp <= 0xA0 || cp == 0xAD) return false;
    if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
        (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF)
        return false;
    if ((cp >= 0x600 && cp <= 0x605) || cp == 0x61C || cp == 0x6DD || cp == 0x70F || cp == 0x180E) return false;
    if ((cp >= 0xD800 && cp <= 0xF8FF) || (cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE) return false;
    if ((cp >= 0xFFF9 && cp <= 0xFFFB) || cp >= 0xF0000 || (cp >= 0xE0000 && cp <= 0xE0FFF)) return false;
    return true;
}

void append_hex(std::string& out, const char* prefix, uint32_t value, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%0*x", digits, value);
    out += prefix;
    out += buf;
}

void repr_into(std::string& out, const Value& v, int depth);

void repr_items(std::string& out, const Value& v, int depth) {
    check_depth(depth);
    if (v.kind == Kind::list) {
        out += v.tuple ? '(' : '[';
        const auto& items = v.list->items;
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) out += ", ";
            if (items[i].kind == Kind::list && items[i].list == v.list) out += v.tuple ? "(...)" : "[...]";
            else repr_into(out, items[i], depth + 1);
        }
        if (v.tuple && items.size() == 1) out += ',';
        out += v.tuple ? ')' : ']';
        return;
    }
    out += '{';
    bool first = true;
    for (const auto& [k, val] : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        repr_into(out, k, depth + 1);
        out += ": ";
        if (val.kind == Kind::dict && val.dict == v.dict) out += "{...}";
        else repr_into(out, val, depth + 1);
    }
    out += '}';
}

void repr_into(std::string& out, const Value& v, int depth) {
    switch (v.kind) {
        case Kind::undefined: out += "Undefined"; return;
        case Kind::string:
            if (v.safe) {
                out += "Markup(" + python_string_repr(v.text) + ")";
                return;
            }
            out += python_string_repr(v.text);
            return;
        case Kind::list:
        case Kind::dict: repr_items(out, v, depth); return;
        case Kind::ns: {
            out += "<Namespace ";
            Value d;
            d.kind = Kind::dict;
            d.dict = v.dict;
            repr_items(out, d, depth + 1);
            out += '>';
            return;
        }
        default: out += python_str(v); return;
    }
}

// json.dumps' string encoder (py_encode_basestring[_ascii]).
void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out += '"';
    for (uint32_t cp : utf8_decode(s)) {
        switch (cp) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            case '\b': out += "\\b"; continue;
            case '\f': out += "\\f"; continue;
            default: break;
        }
        if (cp < 0x20 || (ensure_ascii && cp > 0x7E)) {
            if (cp >= 0x10000) {
                uint32_t u = cp - 0x10000;
                append_hex(out, "\\u", 0xD800 | (u >> 10), 4);
                append_hex(out, "\\u", 0xDC00 | (u & 0x3FF), 4);
            } else {
                append_hex(out, "\\u", cp, 4);
            }
        } else {
            utf8_append(out, cp);
        }
    }
    out += '"';
}

std::string json_float(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return python_float_repr(d);
}

// A dict key as json.dumps writes it: str as is, numbers, bools and None converted.
std::string json_key(const Value& k) {
    switch (k.kind) {
        case Kind::string: return k.text;
        case Kind::boolean: return k.boolean ? "true" : "false";
        case Kind::none: return "null";
        case Kind::integer: return std::to_string(k.integer);
        case Kind::floating: return json_float(k.number);
        default:
            fail(Status::invalid_argument,
                 std::string("tojson: keys must be str, int, float, bool or None, not ") + k.type_name());
    }
}

bool key_less(const Value& a, const Value& b) {
    if (a.kind == Kind::string && b.kind == Kind::string) return a.text < b.text;
    if (a.is_number() && b.is_number()) {
        double x = a.kind == Kind::floating ? a.number : static_cast<double>(a.integer);
        double y = b.kind == Kind::floating ? b.number : static_cast<double>(b.integer);
        return x < y;
    }
    fail(Status::invalid_argument, std::string("tojson: '<' not supported between instances of '") + a.type_name() +
                                       "' and '" + b.type_name() + "' (sorting the keys)");
}

void newline_indent(std::string& out, const JsonDumpOptions& o, int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += o.indent_text.empty() ? std::string(static_cast<size_t>(o.indent), ' ') : o.indent_text;
}

void dumps_into(std::string& out, const Value& v, const JsonDumpOptions& o, int depth) {
    check_depth(depth);
    const bool pretty = o.indent >= 0 || !o.indent_text.empty();
    switch (v.kind) {
        case Kind::none: out += "null"; return;
        case Kind::boolean: out += v.boolean ? "true" : "false"; return;
        case Kind::integer: out += std::to_string(v.integer); return;
        case Kind::floating: out += json_float(v.number); return;
        case Kind::string: json_string(out, v.text, o.ensure_ascii); return;
        case Kind::list: {
            const auto& items = v.list->items;
            if (items.empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += pretty ? "," : ", ";
                if (pretty) newline_indent(out, o, depth + 1);
                dumps_into(out, items[i], o, depth + 1);
            }
            if (pretty) newline_indent(out, o, depth);
            out += ']';
            return;
        }
        case Kind::dict: {
            if (v.dict->items.empty()) {
                out += "{}";
                return;
            }
            std::vector<const std::pair<Value, Value>*> order;
            for (const auto& kv : v.dict->items) order.push_back(&kv);
            if (o.sort_keys)
                std::stable_sort(order.begin(), order.end(),
                                 [](const auto* a, const auto* b) { return key_less(a->first, b->first); });
            out += '{';
            bool first = true;
            for (const auto* kv : order) {
                if (!first) out += pretty ? "," : ", ";
                first = false;
                if (pretty) newline_indent(out, o, depth + 1);
                json_string(out, json_key(kv->first), o.ensure_ascii);
                out += ": ";
                dumps_into(out, kv->second, o, depth + 1);
            }
            if (pretty) newline_indent(out, o, depth);
            out += '}';
            return;
        }
        default:
            fail(Status::invalid_argument,
                 std::string("tojson: Object of type ") + v.type_name() + " is not JSON serializable");
    }
}

Value from_json(const nlohmann::ordered_json& j, int depth) {
    check_depth(depth);
    switch (j.type()) {
        case nlohmann::json::value_t::null: return Value::none();
        case nlohmann::json::value_t::boolean: return Value::from_bool(j.get<bool>());
        case nlohmann::json::value_t::number_integer: return Value::from_int(j.get<int64_t>());
        case nlohmann::json::value_t::number_unsigned: {
            uint64_t u = j.get<uint64_t>();
            if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail(Status::unsupported, "the integer " + std::to_string(u) + " does not fit 64 bits");
            return Value::from_int(static_cast<int64_t>(u));
        }
        case nlohmann::json::value_t::number_float: return Value::from_float(j.get<double>());
        case nlohmann::json::value_t::string: return Value::from_string(j.get<std::string>());
        case nlohmann::json::value_t::array: {
            Value list = Value::new_list();
            list.list->items.reserve(j.size());
            for (const auto& e : j) list.list->items.push_back(from_json(e, depth + 1));
            return list;
        }
        case nlohmann::json::value_t::object: {
            Value dict = Value::new_dict();
            for (auto it = j.begin(); it != j.end(); ++it)
                dict.dict->items.emplace_back(Value::from_string(it.key()), from_json(it.value(), depth + 1));
            return dict;
        }
        default: fail(Status::invalid_argument, "unsupported JSON value");
    }
}

}  // namespace

std::string python_float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);  // "-1.2345e-05": shortest round-trip digits
    bool negative = sci[0] == '-';
    if (negative) sci.erase(0, 1);
    size_t e = sci.find('e');
    int exponent = std::stoi(sci.substr(e + 1));
    std::string digits;
    for (size_t i = 0; i < e; ++i)
        if (sci[i] != '.') digits += sci[i];
    const int decpt = exponent + 1;  // value = 0.digits * 10^decpt
    std::string out = negative ? "-" : "";
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
        } else if (static_cast<size_t>(decpt) >= digits.size()) {
            out += digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
        } else {
            out += digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
    return out + ebuf;
}

std::string python_string_repr(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (uint32_t cp : utf8_decode(s)) {
        if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (printable(cp)) {
            utf8_append(out, cp);
        } else if (cp < 0x100) {
            append_hex(out, "\\x", cp, 2);
        } else if (cp < 0x10000) {
            append_hex(out, "\\u", cp, 4);
        } else {
            append_hex(out, "\\U", cp, 8);
        }
    }
    out += quote;
    return out;
}

std::string python_str(const Value& v) {
    switch (v.kind) {
        case Kind::undefined: return "";
        case Kind::none: return "None";
        case Kind::boolean: return v.boolean ? "True" : "False";
        case Kind::integer: return std::to_string(v.integer);
        case Kind::floating: return python_float_repr(v.number);
        case Kind::string: return v.text;
        case Kind::callable: return "<" + v.callable->describe() + ">";
        default: {
            std::string out;
            repr_into(out, v, 0);
            return out;
        }
    }
}

std::string python_repr(const Value& v) {
    std::string out;
    repr_into(out, v, 0);
    return out;
}

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
    std::string out;
    dumps_into(out, v, options, 0);
    return out;
}

std::string html_safe_json(const Value& v, const JsonDumpOptions& options) {
    std::string raw = json_dumps(v, options);
    std::string out;
    out.reserve(raw.size());
    for (char c : raw) {
        switch (c) {
            case '<': out += "\\u003c"; break;
            case '>': out += "\\u003e"; break;
            case '&': out += "\\u0026"; break;
            case '\'': out += "\\u0027"; break;
            default: out += c;
        }
    }
    return out;
}

Value parse_json(std::string_view text, const char* what) {
    nlohmann::ordered_json j;
    try {
        j = nlohmann::ordered_json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        fail(Status::invalid_argument, std::string(what) + " is not valid JSON: " + e.what());
    }
    return from_json(j, 0);
}

}  // namespace strata::chat
