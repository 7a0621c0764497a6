// GGUF metadata values: the value type enum and Value, a cheap read-only view of one value
// that points into the file mapping (valid while its ModelFile lives).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace strata::gguf {

enum class ValueType : uint32_t {
    u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
    string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

// "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64",
// "f64"; "invalid" for anything else.
const char* value_type_name(ValueType type);

// Bytes of one encoded scalar of this type; 0 for string and array (variable size).
uint32_t value_type_size(ValueType type);

namespace detail {
// One parsed value. Arrays of strings or arrays keep one child node per element, so that
// Value::at is O(1); arrays of fixed-size scalars have no children (elements are computed).
struct Node {
    ValueType type = ValueType::u8;
    ValueType elem = ValueType::u8;   // arrays only
    uint64_t count = 0;               // arrays: elements; strings: bytes
    const uint8_t* data = nullptr;    // scalars: the value; strings: the bytes; arrays: element 0
    const uint8_t* raw = nullptr;     // the whole encoding after the type tag (string length
    uint64_t raw_size = 0;            // prefix, array header included)
    const Node* children = nullptr;   // arrays of strings / arrays: count nodes
};
}  // namespace detail

class Value {
public:
    Value() = default;
    // Scalar element of a fixed-size array (no node of its own).
    Value(ValueType type, const uint8_t* data) : type_(type), data_(data) {}
    explicit Value(const detail::Node* node) : type_(node->type), data_(node->data), node_(node) {}

    ValueType type() const { return type_; }
    bool is_array() const { return type_ == ValueType::array; }

    // Arrays: element type, element count, element i (throws Error not_found when i >= size()).
    // For non-arrays element_type() is type() and size() is 0 (strings: use as_string()).
    ValueType element_type() const;
    uint64_t size() const;
    Value at(uint64_t i) const;
    // Arrays of fixed-size scalars: the packed little-endian elements; empty span otherwise.
    std::span<const uint8_t> array_bytes() const;

    // Checked accessors: nullopt when the type does not match or the value does not fit.
    std::optional<int64_t> as_int() const;      // any integer type whose value fits in int64
    std::optional<uint64_t> as_uint() const;    // any integer type whose value is >= 0
    std::optional<double> as_double() const;    // f32 (widened exactly) or f64
    std::optional<bool> as_bool() const;
    std::optional<std::string_view> as_string() const;
    // IEEE bits of f32 (in the low 32 bits) or f64; nullopt for other types.
    std::optional<uint64_t> float_bits() const;

    // The value's GGUF encoding after its type tag (for copying values into a Writer).
    std::span<const uint8_t> raw() const;

    // JSON rendering of any value, nested arrays included.
    //  * integers exact (u64/i64 extremes included), bools true/false;
    //  * floats as the shortest decimal that round-trips to the same f32/f64 (std::to_chars);
    //    NaN, +Inf and -Inf as the strings "NaN", "Infinity", "-Infinity" (JSON has none);
    //  * strings JSON-escaped (", \, control characters as \uXXXX); valid UTF-8 is kept as is;
    //    every byte that is not part of a valid UTF-8 sequence is written as \u00XX (the byte
    //    value as a code point), so the output is always valid UTF-8/JSON.
    std::string to_json() const;

private:
    ValueType type_ = ValueType::u8;
    const uint8_t* data_ = nullptr;
    const detail::Node* node_ = nullptr;
};

// JSON string literal (with quotes) for arbitrary bytes, escaped as to_json describes.
std::string json_quote(std::string_view bytes);

}  // namespace strata::gguf
