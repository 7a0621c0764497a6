// strata_writer_*: building GGUF files (and split shards) through the C ABI.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "capi/guard.hpp"
#include "gguf/ggml_types.hpp"
#include "gguf/writer.hpp"
#include "quant/formats.hpp"
#include "quant/iq/iq1s_quantize.hpp"

using strata::Status;
using strata::fail;
using strata::capi::require;
using strata::gguf::ValueType;

struct strata_writer {
    strata::gguf::Writer writer;
    std::set<std::string, std::less<>> keys;  // the gguf Writer replaces on re-set; the ABI refuses
};

namespace {

strata::gguf::Writer& claim_key(strata_writer* w, const char* key) {
    require(w, "writer");
    require(key, "key");
    if (!*key) fail(Status::invalid_argument, "metadata keys must not be empty");
    if (!w->keys.insert(key).second) fail(Status::invalid_argument, std::string("metadata key '") + key + "' is already set");
    return w->writer;
}

template <typename T>
bool fits(int64_t v) {
    return v >= int64_t(std::numeric_limits<T>::min()) && v <= int64_t(std::numeric_limits<T>::max());
}

[[noreturn]] void out_of_range(const char* key, const std::string& value, strata_value_type type) {
    fail(Status::invalid_argument, std::string("value ") + value + " for key '" + key + "' does not fit " +
                                       strata::gguf::value_type_name(ValueType(type)));
}

std::vector<int64_t> shape_of(const char* name, uint32_t n_dims, const int64_t* ne) {
    if (n_dims < 1 || n_dims > 4)
        fail(Status::invalid_argument, std::string("tensor '") + name + "': n_dims is " + std::to_string(n_dims) +
                                           ", expected 1 to 4");
    require(ne, "ne");
    std::vector<int64_t> shape(ne, ne + n_dims);
    for (uint32_t d = 0; d < n_dims; ++d)
        if (shape[d] < 1)
            fail(Status::invalid_argument, std::string("tensor '") + name + "': ne[" + std::to_string(d) + "] is " +
                                               std::to_string(shape[d]) + ", expected at least 1");
    return shape;
}

uint64_t nbytes_of(const char* name, int type, const std::vector<int64_t>& shape) {
    if (type < 0 || !strata::gguf::ggml_type_usable(uint32_t(type)))
        fail(Status::unsupported, std::string("tensor '") + name + "': ggml type id " + std::to_string(type) +
                                      " is unknown or removed");
    auto n = strata::gguf::ggml_nbytes(uint32_t(type), uint32_t(shape.size()), shape.data());
    if (!n) {
        const auto* info = strata::gguf::ggml_type_info(uint32_t(type));
        fail(Status::invalid_argument, std::string("tensor '") + name + "': ne[0] = " + std::to_string(shape[0]) +
                                           " is not a multiple of the " + info->name + " block size " +
                                           std::to_string(info->block_size) + ", or the size overflows");
    }
    return *n;
}

}  // namespace

extern "C" {

strata_status strata_writer_create(strata_writer** out_writer) {
    STRATA_API_BEGIN
    require(out_writer, "out_writer");
    *out_writer = new strata_writer();
    STRATA_API_END
}

void strata_writer_free(strata_writer* writer) { delete writer; }

strata_status strata_writer_set_int(strata_writer* writer, const char* key, strata_value_type type, int64_t value) {
    STRATA_API_BEGIN
    require(writer, "writer");
    require(key, "key");
    const std::string text = std::to_string(value);
    bool ok = true;
    switch (type) {
        case STRATA_VALUE_U8: ok = value >= 0 && value <= 0xff; break;
        case STRATA_VALUE_I8: ok = fits<int8_t>(value); break;
        case STRATA_VALUE_U16: ok = value >= 0 && value <= 0xffff; break;
        case STRATA_VALUE_I16: ok = fits<int16_t>(value); break;
        case STRATA_VALUE_U32: ok = value >= 0 && value <= 0xffffffffLL; break;
        case STRATA_VALUE_I32: ok = fits<int32_t>(value); break;
        case STRATA_VALUE_U64: ok = value >= 0; break;
        case STRATA_VALUE_I64: break;
        default: fail(Status::invalid_argument, std::string("key '") + key + "': type " + std::to_string(int(type)) +
                                                    " is not an integer type");
    }
    if (!ok) out_of_range(key, text, type);
    auto& w = claim_key(writer, key);
    switch (type) {
        case STRATA_VALUE_U8: w.set_u8(key, uint8_t(value)); break;
        case STRATA_VALUE_I8: w.set_i8(key, int8_t(value)); break;
        case STRATA_VALUE_U16: w.set_u16(key, uint16_t(value)); break;
        case STRATA_VALUE_I16: w.set_i16(key, int16_t(value)); break;
        case STRATA_VALUE_U32: w.set_u32(key, uint32_t(value)); break;
        case STRATA_VALUE_I32: w.set_i32(key, int32_t(value)); break;
        case STRATA_VALUE_U64: w.set_u64(key, uint64_t(value)); break;
        default: w.set_i64(key, value); break;
    }
    STRATA_API_END
}

strata_status strata_writer_set_uint(strata_writer* writer, const char* key, strata_value_type type, uint64_t value) {
    STRATA_API_BEGIN
    require(writer, "writer");
    require(key, "key");
    if (type == STRATA_VALUE_U64) {
        claim_key(writer, key).set_u64(key, value);
        return STRATA_OK;
    }
    if (value > uint64_t(std::numeric_limits<int64_t>::max())) out_of_range(key, std::to_string(value), type);
    return strata_writer_set_int(writer, key, type, int64_t(value));
    STRATA_API_END
}

strata_status strata_writer_set_float(strata_writer* writer, const char* key, strata_value_type type, double value) {
    STRATA_API_BEGIN
    require(writer, "writer");
    require(key, "key");
    if (type == STRATA_VALUE_F32) {
        claim_key(writer, key).set_f32(key, float(value));
    } else if (type == STRATA_VALUE_F64) {
        claim_key(writer, key).set_f64(key, value);
    } else {
        fail(Status::invalid_argument, std::string("key '") + key + "': type " + std::to_string(int(type)) +
                                           " is not a float type (f32 or f64)");
    }
    STRATA_API_END
}

strata_status strata_writer_set_bool(strata_writer* writer, const char* key, int value) {
    STRATA_API_BEGIN
    claim_key(writer, key).set_bool(key, value != 0);
    STRATA_API_END
}

strata_status strata_writer_set_string(strata_writer* writer, const char* key, const char* data, size_t length) {
    STRATA_API_BEGIN
    if (length) require(data, "data");
    claim_key(writer, key).set_string(key, std::string_view(length ? data : "", length));
    STRATA_API_END
}

strata_status strata_writer_set_array(strata_writer* writer, const char* key, strata_value_type element_type,
                                      const void* data, uint64_t count) {
    STRATA_API_BEGIN
    require(writer, "writer");
    require(key, "key");
    const auto elem = ValueType(element_type);
    if (element_type < 0 || uint32_t(element_type) >= strata::gguf::kValueTypeCount ||
        strata::gguf::value_type_size(elem) == 0)
        fail(Status::invalid_argument, std::string("key '") + key + "': element type " +
                                           std::to_string(int(element_type)) +
                                           " is not a fixed-size type (use strata_writer_set_string_array for strings)");
    if (count) require(data, "data");
    if (elem == ValueType::boolean) {
        const auto* bytes = static_cast<const uint8_t*>(data);
        for (uint64_t i = 0; i < count; ++i)
            if (bytes[i] > 1)
                fail(Status::invalid_argument, std::string("key '") + key + "': bool element " + std::to_string(i) +
                                                   " is " + std::to_string(bytes[i]) + ", expected 0 or 1");
    }
    claim_key(writer, key).set_array(key, elem, data, count);
    STRATA_API_END
}

strata_status strata_writer_set_string_array(strata_writer* writer, const char* key, const char* const* strings,
                                             const size_t* lengths, uint64_t count) {
    STRATA_API_BEGIN
    require(writer, "writer");
    require(key, "key");
    if (count) require(strings, "strings");
    std::vector<std::string> items;
    items.reserve(size_t(count));
    for (uint64_t i = 0; i < count; ++i) {
        if (!lengths) require(strings[i], "strings[i]");  // NUL-terminated: must exist
        const size_t n = lengths ? lengths[i] : std::strlen(strings[i]);
        if (n) require(strings[i], "strings[i]");
        items.emplace_back(n ? strings[i] : "", n);
    }
    claim_key(writer, key).set_string_array(key, items);
    STRATA_API_END
}

strata_status strata_writer_add_tensor_f32(strata_writer* writer, const char* name, int type, uint32_t n_dims,
                                           const int64_t* ne, const float* data, const float* imatrix) {
    STRATA_API_BEGIN
    require(writer, "writer");
    require(name, "name");
    const auto shape = shape_of(name, n_dims, ne);
    const uint64_t n_bytes = nbytes_of(name, type, shape);
    if (!strata::quant::can_quantize(uint32_t(type)))
        fail(Status::unsupported, std::string("tensor '") + name + "': strata cannot quantize to " +
                                      strata::gguf::ggml_type_name(uint32_t(type)));
    if (imatrix && type != STRATA_TYPE_IQ1_S)
        fail(Status::invalid_argument, std::string("tensor '") + name + "': an importance matrix is only used for iq1_s");
    require(data, "data");
    const int64_t cols = shape[0];
    int64_t rows = 1;
    for (size_t d = 1; d < shape.size(); ++d) rows *= shape[d];  // bounded: nbytes_of checked the product
    for (int64_t i = 0; i < rows * cols; ++i)
        if (!std::isfinite(data[i]))
            fail(Status::invalid_argument, std::string("tensor '") + name + "': element " + std::to_string(i) +
                                               " is not finite");
    std::vector<uint8_t> bytes(static_cast<size_t>(n_bytes));
    if (type == STRATA_TYPE_IQ1_S) {
        const int threads = int(std::max(1u, std::thread::hardware_concurrency()));
        strata::quant::quantize_iq1s(data, bytes.data(), rows, cols, imatrix, threads);
    } else {
        const uint64_t row_bytes = n_bytes / uint64_t(rows);
        for (int64_t r = 0; r < rows; ++r)
            strata::quant::quantize_row(uint32_t(type), data + r * cols, bytes.data() + uint64_t(r) * row_bytes, cols,
                                        nullptr);
    }
    writer->writer.add_tensor(name, uint32_t(type), n_dims, shape.data(), bytes);
    STRATA_API_END
}

strata_status strata_writer_add_tensor_raw(strata_writer* writer, const char* name, int type, uint32_t n_dims,
                                           const int64_t* ne, const void* data, uint64_t n_bytes) {
    STRATA_API_BEGIN
    require(writer, "writer");
    require(name, "name");
    const auto shape = shape_of(name, n_dims, ne);
    const uint64_t expected = nbytes_of(name, type, shape);
    if (n_bytes != expected)
        fail(Status::invalid_argument, std::string("tensor '") + name + "': n_bytes is " + std::to_string(n_bytes) +
                                           ", but its type and shape need " + std::to_string(expected));
    require(data, "data");
    writer->writer.add_tensor(name, uint32_t(type), n_dims, shape.data(),
                              {static_cast<const uint8_t*>(data), size_t(n_bytes)});
    STRATA_API_END
}

void strata_write_default_params(strata_write_params* params) {
    if (!params) return;
    *params = strata_write_params{};
    params->struct_size = sizeof *params;
    params->n_shards = 1;
}

strata_status strata_writer_write(strata_writer* writer, const char* path, const strata_write_params* params,
                                  uint32_t* out_n_written) {
    STRATA_API_BEGIN
    require(writer, "writer");
    require(path, "path");
    const strata_write_params p = strata::capi::params_or_default(params, strata_write_default_params);
    if (p.n_shards < 1 || p.n_shards > 99999)
        fail(Status::invalid_argument, "n_shards is " + std::to_string(p.n_shards) + ", expected 1 to 99999");
    auto written = writer->writer.write(path, p.n_shards);
    if (out_n_written) *out_n_written = uint32_t(written.size());
    STRATA_API_END
}

}  // extern "C"
