// The value model of the Jinja interpreter: the Python values a jinja2 template sees (None,
// bool, int, float, str, list/tuple, dict, jinja2's Undefined, namespace(), callables).
// Lists, dicts and namespaces are shared by reference, as Python objects are, so that
// `ns.ids.append(x)` changes the list every holder sees.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::chat {

enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, ns, callable };

struct Value;
struct ListObj;
struct DictObj;
struct Callable;

struct Value {
    Kind kind = Kind::undefined;
    bool boolean = false;
    bool safe = false;       // a markupsafe.Markup string (tojson, safe, escape)
    bool tuple = false;      // a list that is a Python tuple (repr "(1, 2)")
    int64_t integer = 0;
    double number = 0;
    std::string text;        // the string; for an undefined: the name it was looked up by
    std::shared_ptr<ListObj> list;
    std::shared_ptr<DictObj> dict;  // also the attributes of a namespace
    std::shared_ptr<Callable> callable;

    static Value undefined(std::string hint = {});
    static Value none();
    static Value from_bool(bool b);
    static Value from_int(int64_t i);
    static Value from_float(double d);
    static Value from_string(std::string s, bool safe = false);
    static Value new_list(std::vector<Value> items = {}, bool tuple = false);
    static Value new_dict();
    static Value new_namespace();
    static Value from_callable(std::shared_ptr<Callable> c);

    bool is_undefined() const { return kind == Kind::undefined; }
    bool is_none() const { return kind == Kind::none; }
    bool is_string() const { return kind == Kind::string; }
    bool is_list() const { return kind == Kind::list; }
    bool is_dict() const { return kind == Kind::dict; }
    bool is_number() const { return kind == Kind::integer || kind == Kind::floating || kind == Kind::boolean; }
    // Python truthiness (Undefined is falsy).
    bool truthy() const;
    // The Python type name, as error messages name it ("str", "int", "dict", ...).
    const char* type_name() const;
};

struct ListObj {
    std::vector<Value> items;
};

// An ordered dict (Python 3.7+ order: insertion, re-assignment keeps the position).
struct DictObj {
    std::vector<std::pair<Value, Value>> items;
    const Value* find(const Value& key) const;
    Value* find(const Value& key);
    const Value* find(std::string_view key) const;
    void set(Value key, Value value);
    bool erase(const Value& key);
};

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
    int line = 0;
};

class Interpreter;

// Something a template can call: a macro, a builtin global, a bound method, loop.cycle.
struct Callable {
    virtual ~Callable() = default;
    virtual Value call(Interpreter& interp, CallArgs& args) = 0;
    virtual std::string describe() const = 0;  // for repr and error messages
    // Attributes of the object (loop.index, cycler.next, ...): true and `out` set when present.
    virtual bool attribute(const std::string& name, Value& out) const {
        (void)name;
        (void)out;
        return false;
    }
};

// Lists and dicts are shared (std::shared_ptr), so a template can make cycles: a list appended
// to itself, a namespace holding a macro whose scope holds the namespace. While a RenderArena
// lives on this thread, every list and dict made is recorded, and they are all emptied when it
// ends (after the output is built), so that nothing a render made outlives it.
class RenderArena {
public:
    RenderArena();
    ~RenderArena();
    RenderArena(const RenderArena&) = delete;
    RenderArena& operator=(const RenderArena&) = delete;

    static void record(const std::shared_ptr<ListObj>& list);
    static void record(const std::shared_ptr<DictObj>& dict);

private:
    std::vector<std::weak_ptr<ListObj>> lists_;
    std::vector<std::weak_ptr<DictObj>> dicts_;
    RenderArena* outer_;
};

// Python ==, as jinja2 compares (1 == 1.0 == True; a tuple never equals a list).
bool equals(const Value& a, const Value& b);

// --- UTF-8 helpers: Python str counts code points ---
size_t utf8_length(std::string_view s);
std::vector<uint32_t> utf8_decode(std::string_view s);
void utf8_append(std::string& out, uint32_t cp);
std::string utf8_encode(const std::vector<uint32_t>& cps, size_t begin, size_t end);
bool is_ascii(std::string_view s);

}  // namespace strata::chat
