#include "gguf/value.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "util/error.hpp"

static_assert(std::endian::native == std::endian::little, "GGUF is little-endian; so is every host we build for");

namespace strata::gguf {
namespace {

template <typename T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <typename F>
std::string float_json(F v) {
    if (std::isnan(v)) return "\"NaN\"";
    if (std::isinf(v)) return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

// Length of the valid UTF-8 sequence at s[i], or 0 if the byte there does not start one.
size_t utf8_sequence(std::string_view s, size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t min;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) { n = 2; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { n = 3; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { n = 4; min = 0x10000; }
    else return 0;
    if (s.size() - i < n) return 0;
    uint32_t cp = c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
        const auto d = static_cast<unsigned char>(s[i + k]);
        if ((d & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (d & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not valid UTF-8.
    if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
    return n;
}

void append_u00(std::string& out, unsigned v) {
    static const char hex[] = "0123456789abcdef";
    out += "\\u00";
    out += hex[(v >> 4) & 0xF];
    out += hex[v & 0xF];
}

}  // namespace

const char* value_type_name(ValueType type) {
    switch (type) {
        case ValueType::u8: return "u8";
        case ValueType::i8: return "i8";
        case ValueType::u16: return "u16";
        case ValueType::i16: return "i16";
        case ValueType::u32: return "u32";
        case ValueType::i32: return "i32";
        case ValueType::f32: return "f32";
        case ValueType::boolean: return "bool";
        case ValueType::string: return "string";
        case ValueType::array: return "array";
        case ValueType::u64: return "u64";
        case ValueType::i64: return "i64";
        case ValueType::f64: return "f64";
    }
    return "invalid";
}

uint32_t value_type_size(ValueType type) {
    switch (type) {
        case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
        case ValueType::u16: case ValueType::i16: return 2;
        case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
        case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
        case ValueType::string: case ValueType::array: return 0;
    }
    return 0;
}

ValueType Value::element_type() const { return node_ && type_ == ValueType::array ? node_->elem : type_; }

uint64_t Value::size() const { return node_ && type_ == ValueType::array ? node_->count : 0; }

Value Value::at(uint64_t i) const {
    if (!node_ || type_ != ValueType::array || i >= node_->count)
        fail(Status::not_found, "array index " + std::to_string(i) + " out of range (size " +
                                    std::to_string(size()) + ")");
    if (node_->children) return Value(&node_->children[i]);
    return Value(node_->elem, node_->data + i * value_type_size(node_->elem));
}

std::span<const uint8_t> Value::array_bytes() const {
    if (!node_ || type_ != ValueType::array || node_->children) return {};
    return {node_->data, node_->count * value_type_size(node_->elem)};
}

std::optional<int64_t> Value::as_int() const {
    switch (type_) {
        case ValueType::u8: return load<uint8_t>(data_);
        case ValueType::i8: return load<int8_t>(data_);
        case ValueType::u16: return load<uint16_t>(data_);
        case ValueType::i16: return load<int16_t>(data_);
        case ValueType::u32: return load<uint32_t>(data_);
        case ValueType::i32: return load<int32_t>(data_);
        case ValueType::i64: return load<int64_t>(data_);
        case ValueType::u64: {
            const auto v = load<uint64_t>(data_);
            if (v > uint64_t(INT64_MAX)) return std::nullopt;
            return int64_t(v);
        }
        default: return std::nullopt;
    }
}

std::optional<uint64_t> Value::as_uint() const {
    if (type_ == ValueType::u64) return load<uint64_t>(data_);
    auto v = as_int();
    if (!v || *v < 0) return std::nullopt;
    return uint64_t(*v);
}

std::optional<double> Value::as_double() const {
    if (type_ == ValueType::f32) return double(load<float>(data_));
    if (type_ == ValueType::f64) return load<double>(data_);
    return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
    if (type_ != ValueType::boolean) return std::nullopt;
    return data_[0] != 0;
}

std::optional<std::string_view> Value::as_string() const {
    if (type_ != ValueType::string || !node_) return std::nullopt;
    return std::string_view(reinterpret_cast<const char*>(node_->data), node_->count);
}

std::optional<uint64_t> Value::float_bits() const {
    if (type_ == ValueType::f32) return load<uint32_t>(data_);
    if (type_ == ValueType::f64) return load<uint64_t>(data_);
    return std::nullopt;
}

std::span<const uint8_t> Value::raw() const {
    if (node_) return {node_->raw, node_->raw_size};
    return {data_, value_type_size(type_)};
}

std::string json_quote(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const size_t n = utf8_sequence(s, i);
        if (n == 0) {
            append_u00(out, c);
            ++i;
            continue;
        }
        if (n > 1) {
            out.append(s.substr(i, n));
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c < 0x20 || c == 0x7F) {
            append_u00(out, c);
        } else {
            out += char(c);
        }
        i += n;
    }
    out += '"';
    return out;
}

std::string Value::to_json() const {
    switch (type_) {
        case ValueType::u64: return std::to_string(load<uint64_t>(data_));
        case ValueType::u8: case ValueType::i8: case ValueType::u16: case ValueType::i16:
        case ValueType::u32: case ValueType::i32: case ValueType::i64:
            return std::to_string(*as_int());
        case ValueType::f32: return float_json(load<float>(data_));
        case ValueType::f64: return float_json(load<double>(data_));
        case ValueType::boolean: return data_[0] ? "true" : "false";
        case ValueType::string: return json_quote(as_string().value_or(""));
        case ValueType::array: {
            std::string out = "[";
            for (uint64_t i = 0; i < size(); ++i) {
                if (i) out += ',';
                out += at(i).to_json();
            }
            return out + "]";
        }
    }
    return "null";
}

}  // namespace strata::gguf
