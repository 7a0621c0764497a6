#include "report/json_checker.hpp"

#include "report/json_io.hpp"

namespace strata::report {

bool JsonChecker::object(const json& v, const std::string& path, std::initializer_list<const char*> required,
                         bool closed) {
    if (!v.is_object()) {
        problem(path.empty() ? "/" : path, std::string("expected an object, found ") + json_type_word(v));
        return false;
    }
    for (const char* key : required)
        if (!v.contains(key)) problem(at(path, key), "missing");
    if (closed)
        for (const auto& [key, value] : v.items()) {
            bool known = false;
            for (const char* k : required) known = known || key == k;
            if (!known) problem(at(path, key), "not allowed here (unknown field)");
        }
    return true;
}

const JsonChecker::json* JsonChecker::member(const json& obj, const char* key, const std::string&) {
    // Missing members were reported by object(); only check what is there.
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
}

const JsonChecker::json* JsonChecker::string(const json& obj, const char* key, const std::string& path,
                                             bool nullable, size_t min_length) {
    const json* v = member(obj, key, path);
    if (!v || (nullable && v->is_null())) return nullptr;
    if (!v->is_string()) {
        problem(at(path, key), std::string("expected a string, found ") + json_type_word(*v));
        return nullptr;
    }
    if (v->get_ref<const std::string&>().size() < min_length) {
        problem(at(path, key), "must not be empty");
        return nullptr;
    }
    return v;
}

const JsonChecker::json* JsonChecker::integer(const json& obj, const char* key, const std::string& path,
                                              int64_t minimum, bool nullable) {
    const json* v = member(obj, key, path);
    if (!v || (nullable && v->is_null())) return nullptr;
    if (!v->is_number_integer()) {
        problem(at(path, key), std::string("expected an integer, found ") + json_type_word(*v));
        return nullptr;
    }
    const bool below = v->is_number_unsigned() ? (minimum > 0 && v->get<uint64_t>() < uint64_t(minimum))
                                               : v->get<int64_t>() < minimum;
    if (below) {
        problem(at(path, key), "must be at least " + std::to_string(minimum));
        return nullptr;
    }
    return v;
}

const JsonChecker::json* JsonChecker::number(const json& obj, const char* key, const std::string& path,
                                             double minimum, bool nullable) {
    const json* v = member(obj, key, path);
    if (!v || (nullable && v->is_null())) return nullptr;
    if (!v->is_number()) {
        problem(at(path, key), std::string("expected a number, found ") + json_type_word(*v));
        return nullptr;
    }
    if (!(v->get<double>() >= minimum)) {
        problem(at(path, key), "must be at least " + std::to_string(minimum));
        return nullptr;
    }
    return v;
}

const JsonChecker::json* JsonChecker::boolean(const json& obj, const char* key, const std::string& path,
                                              bool nullable) {
    const json* v = member(obj, key, path);
    if (!v || (nullable && v->is_null())) return nullptr;
    if (!v->is_boolean()) {
        problem(at(path, key), std::string("expected true or false, found ") + json_type_word(*v));
        return nullptr;
    }
    return v;
}

const JsonChecker::json* JsonChecker::array(const json& obj, const char* key, const std::string& path) {
    const json* v = member(obj, key, path);
    if (!v) return nullptr;
    if (!v->is_array()) {
        problem(at(path, key), std::string("expected an array, found ") + json_type_word(*v));
        return nullptr;
    }
    return v;
}

const JsonChecker::json* JsonChecker::sub_object(const json& obj, const char* key, const std::string& path,
                                                 std::initializer_list<const char*> required, bool closed) {
    const json* v = member(obj, key, path);
    if (!v) return nullptr;
    return object(*v, at(path, key), required, closed) ? v : nullptr;
}

void JsonChecker::sha256(const json& obj, const char* key, const std::string& path) {
    const json* v = string(obj, key, path);
    if (!v) return;
    const auto& s = v->get_ref<const std::string&>();
    bool ok = s.size() == 64;
    for (char c : s) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    if (!ok) problem(at(path, key), "expected 64 lower-case hex digits (a sha256)");
}

void JsonChecker::one_of(const json& obj, const char* key, const std::string& path,
                         std::initializer_list<const char*> allowed) {
    const json* v = member(obj, key, path);
    if (!v) return;
    if (v->is_string())
        for (const char* a : allowed)
            if (v->get_ref<const std::string&>() == a) return;
    std::string list;
    for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
    problem(at(path, key), "must be one of " + list);
}

}  // namespace strata::report
