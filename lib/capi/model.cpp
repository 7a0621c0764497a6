// strata_model_*: opening GGUF models and reading their metadata, tensors, shards and identity.
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "gguf/digest.hpp"
#include "gguf/ggml_types.hpp"
#include "gguf/model_file.hpp"
#include "quant/formats.hpp"
#include "quant/type_traits.hpp"

using strata::Error;
using strata::Status;
using strata::fail;
using strata::capi::require;
using strata::gguf::Value;
using strata::gguf::ValueType;


namespace strata::capi {

const gguf::ModelFile& file_of(const strata_model* model) { return *require(model, "model")->file; }

const std::shared_ptr<const token::Tokenizer>& tokenizer_of(strata_model* model) {
    require(model, "model");
    // call_once leaves the flag unset when the call throws: a bad vocabulary is reported each time.
    std::call_once(model->tokenizer_once, [model] { model->tokenizer = token::Tokenizer::from_gguf(*model->file); });
    return model->tokenizer;
}

}  // namespace strata::capi

using strata::capi::file_of;

namespace {

Value lookup(const strata_model* model, const char* key) {
    const auto& file = file_of(model);
    require(key, "key");
    auto index = file.find_key(key);
    if (!index) fail(Status::not_found, std::string("metadata key '") + key + "' not found");
    return file.metadata_value(*index);
}

[[noreturn]] void mismatch(const char* key, const Value& v, const char* wanted) {
    std::string what = strata::gguf::value_type_name(v.type());
    if (v.type() != ValueType::string && v.type() != ValueType::array) what += " " + v.to_json();
    fail(Status::type_mismatch, std::string("metadata key '") + key + "' is " + what + ", not " + wanted);
}

Value element(const char* key, const Value& array, uint64_t index) {
    if (!array.is_array()) mismatch(key, array, "an array");
    if (index >= array.size())
        fail(Status::invalid_argument, "index " + std::to_string(index) + " is out of range for array '" + key +
                                           "' of " + std::to_string(array.size()) + " elements");
    return array.at(index);
}

template <typename T, typename Get>
void scalar(const char* key, const Value& v, T* out, const char* wanted, Get get) {
    require(out, "output pointer");
    auto got = get(v);
    if (!got) mismatch(key, v, wanted);
    *out = static_cast<T>(*got);
}

constexpr auto get_int = [](const Value& v) { return v.as_int(); };
constexpr auto get_uint = [](const Value& v) { return v.as_uint(); };
constexpr auto get_float = [](const Value& v) { return v.as_double(); };
constexpr auto get_bool = [](const Value& v) { return v.as_bool(); };

void string_of(const char* key, const Value& v, const char** out_data, size_t* out_length) {
    require(out_data, "out_data");
    require(out_length, "out_length");
    auto s = v.as_string();
    if (!s) mismatch(key, v, "a string");
    *out_data = s->data();
    *out_length = s->size();
}

const strata::gguf::TensorInfo& tensor_at(const strata_model* model, size_t index) {
    const auto& tensors = file_of(model).tensors();
    if (index >= tensors.size())
        fail(Status::invalid_argument, "tensor index " + std::to_string(index) + " is out of range (the model has " +
                                           std::to_string(tensors.size()) + " tensors)");
    return tensors[index];
}

const std::string& shard_digest(strata_model* model, size_t index) {
    const auto& shards = file_of(model).shards();
    if (index >= shards.size())
        fail(Status::invalid_argument, "shard index " + std::to_string(index) + " is out of range (the model has " +
                                           std::to_string(shards.size()) + " shards)");
    std::lock_guard lock(model->digest_mutex);
    std::string& digest = model->shard_digests[index];
    if (digest.empty()) {
        strata::gguf::DigestOptions options;
        options.cache_dir = model->digest_cache_dir;
        options.use_cache = model->use_digest_cache;
        if (model->progress) {
            const std::string& path = shards[index].path;
            options.progress = [model, &path](uint64_t done, uint64_t total) {
                model->progress(path.c_str(), done, total, model->progress_user_data);
            };
        }
        digest = strata::gguf::sha256_file(shards[index].path, options);
    }
    return digest;
}

void copy_hex(const std::string& digest, char* hex) {
    std::memcpy(hex, digest.c_str(), digest.size() + 1);
}

}  // namespace

namespace strata::capi {

std::string identity_of(strata_model* model) {
    const size_t n = file_of(model).shards().size();
    std::vector<std::string> digests;
    for (size_t i = 0; i < n; ++i) digests.push_back(shard_digest(model, i));
    return strata::gguf::model_identity(*model->file, digests);
}

}  // namespace strata::capi

extern "C" {

void strata_model_default_params(strata_model_params* params) {
    if (!params) return;
    *params = strata_model_params{};
    params->struct_size = sizeof *params;
    params->use_digest_cache = 1;
}

strata_status strata_model_open(const char* const* paths, size_t n_paths, const strata_model_params* params,
                                strata_model** out_model) {
    STRATA_API_BEGIN
    require(out_model, "out_model");
    *out_model = nullptr;
    require(paths, "paths");
    if (n_paths == 0) fail(Status::invalid_argument, "n_paths must be at least 1");
    std::vector<std::string> list;
    for (size_t i = 0; i < n_paths; ++i) list.emplace_back(require(paths[i], "paths[i]"));
    const strata_model_params p = strata::capi::params_or_default(params, strata_model_default_params);
    auto model = std::make_unique<strata_model>();
    model->file = strata::gguf::ModelFile::open(list);
    model->progress = p.progress;
    model->progress_user_data = p.progress_user_data;
    if (p.digest_cache_dir) model->digest_cache_dir = p.digest_cache_dir;
    model->use_digest_cache = p.use_digest_cache != 0;
    model->shard_digests.resize(model->file->shards().size());
    *out_model = model.release();
    STRATA_API_END
}

void strata_model_free(strata_model* model) { delete model; }

strata_status strata_model_gguf_version(const strata_model* model, uint32_t* out_version) {
    STRATA_API_BEGIN
    *require(out_version, "out_version") = file_of(model).version();
    STRATA_API_END
}

strata_status strata_model_metadata_count(const strata_model* model, size_t* out_count) {
    STRATA_API_BEGIN
    *require(out_count, "out_count") = file_of(model).metadata_count();
    STRATA_API_END
}

strata_status strata_model_metadata_key(const strata_model* model, size_t index, const char** out_key) {
    STRATA_API_BEGIN
    require(out_key, "out_key");
    const auto& file = file_of(model);
    if (index >= file.metadata_count())
        fail(Status::invalid_argument, "metadata index " + std::to_string(index) + " is out of range (the model has " +
                                           std::to_string(file.metadata_count()) + " keys)");
    *out_key = file.metadata_key_cstr(index);
    STRATA_API_END
}

strata_status strata_model_metadata_type(const strata_model* model, const char* key, strata_value_type* out_type,
                                         strata_value_type* out_element_type, uint64_t* out_count) {
    STRATA_API_BEGIN
    Value v = lookup(model, key);
    if (out_type) *out_type = strata_value_type(v.type());
    if (out_element_type) *out_element_type = strata_value_type(v.element_type());
    if (out_count) *out_count = v.is_array() ? v.size() : 1;
    STRATA_API_END
}

strata_status strata_model_metadata_int(const strata_model* model, const char* key, int64_t* out_value) {
    STRATA_API_BEGIN
    scalar(key, lookup(model, key), out_value, "an integer that fits int64", get_int);
    STRATA_API_END
}

strata_status strata_model_metadata_uint(const strata_model* model, const char* key, uint64_t* out_value) {
    STRATA_API_BEGIN
    scalar(key, lookup(model, key), out_value, "a non-negative integer", get_uint);
    STRATA_API_END
}

strata_status strata_model_metadata_float(const strata_model* model, const char* key, double* out_value) {
    STRATA_API_BEGIN
    scalar(key, lookup(model, key), out_value, "a float (f32 or f64)", get_float);
    STRATA_API_END
}

strata_status strata_model_metadata_bool(const strata_model* model, const char* key, int* out_value) {
    STRATA_API_BEGIN
    scalar(key, lookup(model, key), out_value, "a bool", get_bool);
    STRATA_API_END
}

strata_status strata_model_metadata_string(const strata_model* model, const char* key, const char** out_data,
                                           size_t* out_length) {
    STRATA_API_BEGIN
    string_of(key, lookup(model, key), out_data, out_length);
    STRATA_API_END
}

strata_status strata_model_metadata_array_int(const strata_model* model, const char* key, uint64_t index,
                                              int64_t* out_value) {
    STRATA_API_BEGIN
    scalar(key, element(key, lookup(model, key), index), out_value, "an integer that fits int64", get_int);
    STRATA_API_END
}

strata_status strata_model_metadata_array_uint(const strata_model* model, const char* key, uint64_t index,
                                               uint64_t* out_value) {
    STRATA_API_BEGIN
    scalar(key, element(key, lookup(model, key), index), out_value, "a non-negative integer", get_uint);
    STRATA_API_END
}

strata_status strata_model_metadata_array_float(const strata_model* model, const char* key, uint64_t index,
                                                double* out_value) {
    STRATA_API_BEGIN
    scalar(key, element(key, lookup(model, key), index), out_value, "a float (f32 or f64)", get_float);
    STRATA_API_END
}

strata_status strata_model_metadata_array_bool(const strata_model* model, const char* key, uint64_t index,
                                               int* out_value) {
    STRATA_API_BEGIN
    scalar(key, element(key, lookup(model, key), index), out_value, "a bool", get_bool);
    STRATA_API_END
}

strata_status strata_model_metadata_array_string(const strata_model* model, const char* key, uint64_t index,
                                                 const char** out_data, size_t* out_length) {
    STRATA_API_BEGIN
    string_of(key, element(key, lookup(model, key), index), out_data, out_length);
    STRATA_API_END
}

strata_status strata_model_metadata_json(const strata_model* model, const char* key, char* buffer, size_t capacity,
                                         size_t* out_needed) {
    STRATA_API_BEGIN
    strata::capi::copy_text_out(lookup(model, key).to_json(), buffer, capacity, out_needed,
                                (std::string("the JSON of '") + key + "'").c_str());
    STRATA_API_END
}

strata_status strata_model_tensor_count(const strata_model* model, size_t* out_count) {
    STRATA_API_BEGIN
    *require(out_count, "out_count") = file_of(model).tensors().size();
    STRATA_API_END
}

strata_status strata_model_tensor_info(const strata_model* model, size_t index, strata_tensor_info* out_info) {
    STRATA_API_BEGIN
    strata::capi::require_struct(out_info, sizeof(strata_tensor_info), "out_info");
    const auto& t = tensor_at(model, index);
    out_info->name = t.name.c_str();
    out_info->type = int(t.type);
    out_info->n_dims = t.n_dims;
    for (int d = 0; d < 4; ++d) out_info->ne[d] = t.ne[d];
    out_info->n_elements = t.n_elements;
    out_info->n_bytes = t.nbytes;
    out_info->shard = uint32_t(t.shard);
    out_info->file_offset = t.file_offset;
    STRATA_API_END
}

strata_status strata_model_find_tensor(const strata_model* model, const char* name, size_t* out_index) {
    STRATA_API_BEGIN
    require(name, "name");
    require(out_index, "out_index");
    auto index = file_of(model).find_tensor(name);
    if (!index) fail(Status::not_found, std::string("tensor '") + name + "' not found");
    *out_index = *index;
    STRATA_API_END
}

strata_status strata_model_tensor_data(const strata_model* model, size_t index, const void** out_data,
                                       uint64_t* out_n_bytes) {
    STRATA_API_BEGIN
    require(out_data, "out_data");
    require(out_n_bytes, "out_n_bytes");
    const auto& t = tensor_at(model, index);
    *out_data = t.data;
    *out_n_bytes = t.nbytes;
    STRATA_API_END
}

strata_status strata_model_tensor_read_f32(const strata_model* model, size_t index, float* buffer, uint64_t capacity,
                                           uint64_t* out_needed) {
    STRATA_API_BEGIN
    const auto& t = tensor_at(model, index);
    if (!strata::quant::is_supported(t.type))
        fail(Status::unsupported, "tensor '" + t.name + "' has type " + strata::gguf::ggml_type_name(t.type) +
                                      " (ggml type " + std::to_string(t.type) + "), which strata cannot dequantize (it decodes " +
                                      strata::quant::supported_type_names() + ")");
    if (out_needed) *out_needed = t.n_elements;
    if (capacity < t.n_elements)
        fail(Status::buffer_too_small, "tensor '" + t.name + "' has " + std::to_string(t.n_elements) +
                                           " elements, the buffer holds " + std::to_string(capacity));
    if (t.n_elements == 0) return STRATA_OK;
    require(buffer, "buffer");
    const int64_t row = t.ne[0];
    const uint64_t rows = t.n_elements / uint64_t(row);
    const uint64_t row_bytes = t.nbytes / rows;
    for (uint64_t r = 0; r < rows; ++r)
        strata::quant::dequantize_row(t.type, t.data + r * row_bytes, buffer + r * uint64_t(row), row);
    STRATA_API_END
}

strata_status strata_model_shard_count(const strata_model* model, size_t* out_count) {
    STRATA_API_BEGIN
    *require(out_count, "out_count") = file_of(model).shards().size();
    STRATA_API_END
}

strata_status strata_model_shard_info(const strata_model* model, size_t index, strata_shard_info* out_info) {
    STRATA_API_BEGIN
    strata::capi::require_struct(out_info, sizeof(strata_shard_info), "out_info");
    const auto& shards = file_of(model).shards();
    if (index >= shards.size())
        fail(Status::invalid_argument, "shard index " + std::to_string(index) + " is out of range (the model has " +
                                           std::to_string(shards.size()) + " shards)");
    const auto& s = shards[index];
    out_info->path = s.path.c_str();
    out_info->size = s.size;
    out_info->gguf_version = s.version;
    out_info->alignment = s.alignment;
    out_info->data_offset = s.data_offset;
    out_info->n_tensors = s.n_tensors;
    out_info->n_metadata = s.n_kv;
    STRATA_API_END
}

strata_status strata_model_shard_sha256(strata_model* model, size_t index, char* hex) {
    STRATA_API_BEGIN
    require(hex, "hex");
    copy_hex(shard_digest(model, index), hex);
    STRATA_API_END
}

strata_status strata_model_identity(strata_model* model, char* hex) {
    STRATA_API_BEGIN
    require(hex, "hex");
    copy_hex(strata::capi::identity_of(model), hex);
    STRATA_API_END
}

}  // extern "C"
