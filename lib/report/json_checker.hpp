// Field-by-field checks of a parsed JSON document, collecting every problem with its JSON
// pointer path instead of stopping at the first. The report validator is written with it so
// that each line mirrors one statement of the committed schema.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::report {

class JsonChecker {
public:
    using json = nlohmann::json;

    void problem(const std::string& path, const std::string& what) { problems_.push_back(path + ": " + what); }
    const std::vector<std::string>& problems() const { return problems_; }

    // The value must be an object with exactly these keys required and no others.
    bool object(const json& v, const std::string& path, std::initializer_list<const char*> required,
                bool closed = true);

    // Member checks: each records "missing" or the type/range problem. The returned pointer is
    // the member when it has the checked type, else nullptr.
    const json* string(const json& obj, const char* key, const std::string& path, bool nullable = false,
                       size_t min_length = 0);
    const json* integer(const json& obj, const char* key, const std::string& path, int64_t minimum,
                        bool nullable = false);
    const json* number(const json& obj, const char* key, const std::string& path, double minimum,
                       bool nullable = false);
    const json* boolean(const json& obj, const char* key, const std::string& path, bool nullable = false);
    const json* array(const json& obj, const char* key, const std::string& path);
    const json* sub_object(const json& obj, const char* key, const std::string& path,
                           std::initializer_list<const char*> required, bool closed = true);
    void sha256(const json& obj, const char* key, const std::string& path);
    // A string member that must be one of `allowed`.
    void one_of(const json& obj, const char* key, const std::string& path, std::initializer_list<const char*> allowed);

    static std::string at(const std::string& path, const std::string& key) { return path + "/" + key; }
    static std::string at(const std::string& path, size_t index) { return path + "/" + std::to_string(index); }

private:
    const json* member(const json& obj, const char* key, const std::string& path);
    std::vector<std::string> problems_;
};

}  // namespace strata::report
