#include "chat/jinja_value.hpp"

#include <cmath>

namespace strata::chat {

Value Value::undefined(std::string hint) {
    Value v;
    v.text = std::move(hint);
    return v;
}
Value Value::none() {
    Value v;
    v.kind = Kind::none;
    return v;
}
Value Value::from_bool(bool b) {
    Value v;
    v.kind = Kind::boolean;
    v.boolean = b;
    v.integer = b ? 1 : 0;
    return v;
}
Value Value::from_int(int64_t i) {
    Value v;
    v.kind = Kind::integer;
    v.integer = i;
    return v;
}
Value Value::from_float(double d) {
    Value v;
    v.kind = Kind::floating;
    v.number = d;
    return v;
}
Value Value::from_string(std::string s, bool safe) {
    Value v;
    v.kind = Kind::string;
    v.text = std::move(s);
    v.safe = safe;
    return v;
}
namespace {
thread_local RenderArena* t_arena = nullptr;
}  // namespace

RenderArena::RenderArena() : outer_(t_arena) { t_arena = this; }

RenderArena::~RenderArena() {
    t_arena = outer_;
    // Emptying a container may free others that are still listed: lock each first.
    for (auto& w : lists_)
        if (auto l = w.lock()) l->items.clear();
    for (auto& w : dicts_)
        if (auto d = w.lock()) d->items.clear();
}

namespace {
// Adds w, first forgetting the expired entries when the vector would grow (amortised O(1)).
template <typename T>
void remember(std::vector<std::weak_ptr<T>>& v, const std::shared_ptr<T>& p) {
    if (v.size() >= 1024 && v.size() == v.capacity())
        std::erase_if(v, [](const std::weak_ptr<T>& w) { return w.expired(); });
    v.push_back(p);
}
}  // namespace

void RenderArena::record(const std::shared_ptr<ListObj>& list) {
    if (t_arena) remember(t_arena->lists_, list);
}

void RenderArena::record(const std::shared_ptr<DictObj>& dict) {
    if (t_arena) remember(t_arena->dicts_, dict);
}

Value Value::new_list(std::vector<Value> items, bool tuple) {
    Value v;
    v.kind = Kind::list;
    v.tuple = tuple;
    v.list = std::make_shared<ListObj>();
    v.list->items = std::move(items);
    RenderArena::record(v.list);
    return v;
}
Value Value::new_dict() {
    Value v;
    v.kind = Kind::dict;
    v.dict = std::make_shared<DictObj>();
    RenderArena::record(v.dict);
    return v;
}
Value Value::new_namespace() {
    Value v;
    v.kind = Kind::ns;
    v.dict = std::make_shared<DictObj>();
    RenderArena::record(v.dict);
    return v;
}
Value Value::from_callable(std::shared_ptr<Callable> c) {
    Value v;
    v.kind = Kind::callable;
    v.callable = std::move(c);
    return v;
}

bool Value::truthy() const {
    switch (kind) {
        case Kind::undefined:
        case Kind::none: return false;
        case Kind::boolean: return boolean;
        case Kind::integer: return integer != 0;
        case Kind::floating: return number != 0.0;
        case Kind::string: return !text.empty();
        case Kind::list: return !list->items.empty();
        case Kind::dict: return !dict->items.empty();
        case Kind::ns:
        case Kind::callable: return true;
    }
    return false;
}

const char* Value::type_name() const {
    switch (kind) {
        case Kind::undefined: return "Undefined";
        case Kind::none: return "NoneType";
        case Kind::boolean: return "bool";
        case Kind::integer: return "int";
        case Kind::floating: return "float";
        case Kind::string: return safe ? "Markup" : "str";
        case Kind::list: return tuple ? "tuple" : "list";
        case Kind::dict: return "dict";
        case Kind::ns: return "Namespace";
        case Kind::callable: return "function";
    }
    return "?";
}

namespace {

double as_double(const Value& v) { return v.kind == Kind::floating ? v.number : static_cast<double>(v.integer); }

// Python compares containers by identity first (x == x holds for any x in a list).
bool same_object(const Value& a, const Value& b) {
    if (a.kind != b.kind) return false;
    if (a.kind == Kind::list) return a.list == b.list;
    if (a.kind == Kind::dict || a.kind == Kind::ns) return a.dict == b.dict;
    return false;
}

}  // namespace

bool equals(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.kind != Kind::floating && b.kind != Kind::floating) return a.integer == b.integer;
        return as_double(a) == as_double(b);
    }
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case Kind::undefined:
        case Kind::none: return true;
        case Kind::string: return a.text == b.text;
        case Kind::list: {
            if (a.list == b.list) return true;
            if (a.tuple != b.tuple || a.list->items.size() != b.list->items.size()) return false;
            for (size_t i = 0; i < a.list->items.size(); ++i) {
                const Value& x = a.list->items[i];
                const Value& y = b.list->items[i];
                if (!same_object(x, y) && !equals(x, y)) return false;
            }
            return true;
        }
        case Kind::dict: {
            if (a.dict == b.dict) return true;
            if (a.dict->items.size() != b.dict->items.size()) return false;
            for (const auto& [k, v] : a.dict->items) {
                const Value* other = b.dict->find(k);
                if (!other || (!same_object(v, *other) && !equals(v, *other))) return false;
            }
            return true;
        }
        case Kind::ns: return a.dict == b.dict;
        case Kind::callable: return a.callable == b.callable;
        default: return false;
    }
}

const Value* DictObj::find(const Value& key) const {
    for (const auto& kv : items)
        if (equals(kv.first, key)) return &kv.second;
    return nullptr;
}
Value* DictObj::find(const Value& key) {
    for (auto& kv : items)
        if (equals(kv.first, key)) return &kv.second;
    return nullptr;
}
const Value* DictObj::find(std::string_view key) const {
    for (const auto& kv : items)
        if (kv.first.kind == Kind::string && kv.first.text == key) return &kv.second;
    return nullptr;
}
void DictObj::set(Value key, Value value) {
    if (Value* existing = find(key)) {
        *existing = std::move(value);
        return;
    }
    items.emplace_back(std::move(key), std::move(value));
}
bool DictObj::erase(const Value& key) {
    for (auto it = items.begin(); it != items.end(); ++it)
        if (equals(it->first, key)) {
            items.erase(it);
            return true;
        }
    return false;
}

bool is_ascii(std::string_view s) {
    for (unsigned char c : s)
        if (c >= 0x80) return false;
    return true;
}

size_t utf8_length(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

// The input is valid UTF-8 (JSON input is checked, template source is checked by the lexer).
std::vector<uint32_t> utf8_decode(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        uint32_t cp;
        size_t len;
        if (c < 0x80) { cp = c; len = 1; }
        else if ((c >> 5) == 6) { cp = c & 0x1F; len = 2; }
        else if ((c >> 4) == 14) { cp = c & 0x0F; len = 3; }
        else { cp = c & 0x07; len = 4; }
        if (i + len > s.size()) len = s.size() - i;
        for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        out.push_back(cp);
        i += len;
    }
    return out;
}

void utf8_append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::string utf8_encode(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
    std::string out;
    for (size_t i = begin; i < end; ++i) utf8_append(out, cps[i]);
    return out;
}

}  // namespace strata::chat
