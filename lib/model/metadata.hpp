// Typed, checked reads of GGUF metadata keys for the model loaders: a wrong type or an
// out-of-range value is Error(format) naming the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::gguf {
class ModelFile;
}

namespace strata::model {

std::optional<std::string> meta_string(const gguf::ModelFile& file, const std::string& key);
std::optional<int64_t> meta_int(const gguf::ModelFile& file, const std::string& key);
std::optional<double> meta_float(const gguf::ModelFile& file, const std::string& key);  // any number
std::optional<bool> meta_bool(const gguf::ModelFile& file, const std::string& key);
// An integer array (or a scalar, read as one element): nullopt when absent.
std::optional<std::vector<int64_t>> meta_int_array(const gguf::ModelFile& file, const std::string& key);

int64_t require_int(const gguf::ModelFile& file, const std::string& key);

}  // namespace strata::model
