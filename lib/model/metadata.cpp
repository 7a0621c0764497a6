#include "model/metadata.hpp"

#include "gguf/model_file.hpp"
#include "util/error.hpp"

namespace strata::model {

namespace {

std::optional<gguf::Value> find(const gguf::ModelFile& file, const std::string& key) {
    const auto i = file.find_key(key);
    if (!i) return std::nullopt;
    return file.metadata_value(*i);
}

}  // namespace

std::optional<std::string> meta_string(const gguf::ModelFile& file, const std::string& key) {
    const auto v = find(file, key);
    if (!v) return std::nullopt;
    const auto s = v->as_string();
    if (!s) fail(Status::format, "metadata key '" + key + "' must be a string, found " + gguf::value_type_name(v->type()));
    return std::string(*s);
}

std::optional<int64_t> meta_int(const gguf::ModelFile& file, const std::string& key) {
    const auto v = find(file, key);
    if (!v) return std::nullopt;
    if (v->is_array())
        fail(Status::unsupported, "metadata key '" + key + "' is an array (per-layer values are not supported)");
    const auto i = v->as_int();
    if (!i) fail(Status::format, "metadata key '" + key + "' must be an integer, found " + gguf::value_type_name(v->type()));
    return *i;
}

std::optional<double> meta_float(const gguf::ModelFile& file, const std::string& key) {
    const auto v = find(file, key);
    if (!v) return std::nullopt;
    if (auto d = v->as_double()) return *d;
    if (auto i = v->as_int()) return double(*i);
    fail(Status::format, "metadata key '" + key + "' must be a number, found " + gguf::value_type_name(v->type()));
}

std::optional<bool> meta_bool(const gguf::ModelFile& file, const std::string& key) {
    const auto v = find(file, key);
    if (!v) return std::nullopt;
    if (auto b = v->as_bool()) return *b;
    fail(Status::format, "metadata key '" + key + "' must be a bool, found " + gguf::value_type_name(v->type()));
}

std::optional<std::vector<int64_t>> meta_int_array(const gguf::ModelFile& file, const std::string& key) {
    const auto v = find(file, key);
    if (!v) return std::nullopt;
    std::vector<int64_t> out;
    if (!v->is_array()) {
        const auto i = v->as_int();
        if (!i) fail(Status::format, "metadata key '" + key + "' must be an integer or an integer array");
        out.push_back(*i);
        return out;
    }
    if (v->size() > 1000000) fail(Status::format, "metadata key '" + key + "' has an implausible element count");
    for (uint64_t k = 0; k < v->size(); ++k) {
        const auto i = v->at(k).as_int();
        if (!i) fail(Status::format, "metadata key '" + key + "' element " + std::to_string(k) + " is not an integer");
        out.push_back(*i);
    }
    return out;
}

int64_t require_int(const gguf::ModelFile& file, const std::string& key) {
    const auto v = meta_int(file, key);
    if (!v) fail(Status::format, "metadata key '" + key + "' is missing");
    return *v;
}

}  // namespace strata::model
