// Writer: builds a GGUF v3 file (or the shards of a split model) from metadata and tensors.
// For tools and tests. Everything given is validated (strata::Error invalid_argument).
//
//   Writer w;
//   w.set_string("general.architecture", "llama");
//   w.set_u32("general.alignment", 64);                 // honoured when padding
//   w.set_array("ids", Array::of(ValueType::i32, ids.data(), ids.size()));
//   w.add_tensor("tok_embd.weight", kF32, 2, ne, bytes);
//   auto paths = w.write("out.gguf", 3);  // out-00001-of-00003.gguf ...
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/value.hpp"

namespace strata::gguf {

// An owned array value (elements of one type; arrays of arrays allowed), GGUF-encoded.
class Array {
public:
    // count fixed-size scalars (u8..f64, bool as one byte 0/1) from little-endian memory.
    static Array of(ValueType elem, const void* data, uint64_t count);
    static Array strings(const std::vector<std::string>& items);
    // Arrays of arrays: the items may have different element types (GGUF allows it).
    static Array arrays(const std::vector<Array>& items);

    ValueType element_type() const { return elem_; }
    uint64_t size() const { return count_; }
    // Encoding after the array's type tag: element type, count, elements.
    const std::vector<uint8_t>& encoded() const { return bytes_; }

private:
    ValueType elem_ = ValueType::u8;
    uint64_t count_ = 0;
    std::vector<uint8_t> bytes_;
};

class Writer {
public:
    // Setting a key again replaces its value in place (order of first setting is kept).
    void set_u8(std::string_view key, uint8_t v);
    void set_i8(std::string_view key, int8_t v);
    void set_u16(std::string_view key, uint16_t v);
    void set_i16(std::string_view key, int16_t v);
    void set_u32(std::string_view key, uint32_t v);
    void set_i32(std::string_view key, int32_t v);
    void set_u64(std::string_view key, uint64_t v);
    void set_i64(std::string_view key, int64_t v);
    void set_f32(std::string_view key, float v);
    void set_f64(std::string_view key, double v);
    void set_bool(std::string_view key, bool v);
    void set_string(std::string_view key, std::string_view v);
    void set_array(std::string_view key, const Array& array);
    void set_array(std::string_view key, ValueType elem, const void* data, uint64_t count);
    void set_string_array(std::string_view key, const std::vector<std::string>& items);
    // Copies a value read from a ModelFile (any type, nested arrays included).
    void set_value(std::string_view key, const Value& value);
    void remove(std::string_view key);

    // ne: n_dims values, innermost first. bytes.size() must equal the tensor's nbytes.
    // The bytes are copied.
    void add_tensor(std::string_view name, uint32_t type, uint32_t n_dims, const int64_t* ne,
                    std::span<const uint8_t> bytes);

    // n_shards == 1: writes `path`. n_shards > 1: path must end in ".gguf"; writes
    // STEM-00001-of-0000N.gguf ... (llama.cpp naming); the first shard carries every key plus
    // split.no/split.count/split.tensors.count, the others only the split.* keys (and so the
    // default alignment 32). Tensors are distributed in order, balanced by bytes. Each file is
    // written to PATH.tmp.PID and renamed into place once complete; on error nothing is left.
    // Returns the written paths in shard order.
    std::vector<std::string> write(const std::string& path, size_t n_shards = 1) const;

    // The bytes of a single-file write (what write(path, 1) would store).
    std::vector<uint8_t> to_bytes() const;

    // Shard file names write() would use.
    static std::vector<std::string> shard_paths(const std::string& path, size_t n_shards);

private:
    struct Kv {
        std::string key;
        ValueType type;
        std::vector<uint8_t> payload;  // encoding after the type tag
    };
    struct Tensor {
        std::string name;
        uint32_t type;
        uint32_t n_dims;
        int64_t ne[4];
        std::vector<uint8_t> bytes;
    };
    void set(std::string_view key, ValueType type, std::vector<uint8_t> payload);
    std::vector<uint8_t> build(const std::vector<Kv>& kvs, size_t first, size_t last) const;

    std::vector<Kv> kvs_;
    std::vector<Tensor> tensors_;
};

}  // namespace strata::gguf
