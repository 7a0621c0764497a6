#include "gguf/writer.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "gguf/ggml_types.hpp"
#include "gguf/model_file.hpp"
#include "gguf/split_name.hpp"
#include "util/checked.hpp"
#include "util/error.hpp"

namespace strata::gguf {
namespace {

using std::to_string;

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    uint8_t b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    out.insert(out.end(), b, b + sizeof v);
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

[[noreturn]] void bad(const std::string& what) { fail(Status::invalid_argument, "gguf writer: " + what); }

template <typename T>
std::vector<uint8_t> scalar(T v) {
    std::vector<uint8_t> out;
    put(out, v);
    return out;
}

void pad_to(std::vector<uint8_t>& out, uint64_t alignment) {
    out.resize(*util::checked_align_up(out.size(), alignment), 0);
}

// Writes to a temporary name next to `path`; returns the temporary name.
std::string write_temp(const std::string& path, const std::vector<uint8_t>& bytes) {
    const std::string tmp = path + ".tmp." + to_string(::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail(Status::io, tmp + ": cannot create: " + std::strerror(errno));
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() && std::fflush(f) == 0 &&
                    ::fsync(fileno(f)) == 0;
    const int e = errno;
    if (std::fclose(f) != 0 || !ok) {
        std::remove(tmp.c_str());
        fail(Status::io, tmp + ": write failed: " + std::strerror(ok ? errno : e));
    }
    return tmp;
}

}  // namespace

Array Array::of(ValueType elem, const void* data, uint64_t count) {
    const uint32_t size = value_type_size(elem);
    if (size == 0) bad(std::string("Array::of needs a fixed-size element type, not ") + value_type_name(elem));
    if (count && !data) bad("Array::of: null data");
    auto nbytes = util::checked_mul(count, size);
    if (!nbytes) bad("Array::of: element count overflows");
    const auto* p = static_cast<const uint8_t*>(data);
    if (elem == ValueType::boolean)
        for (uint64_t i = 0; i < count; ++i)
            if (p[i] > 1) bad("bool array element " + to_string(i) + " is " + to_string(p[i]) + " (must be 0 or 1)");
    Array a;
    a.elem_ = elem;
    a.count_ = count;
    put<uint32_t>(a.bytes_, uint32_t(elem));
    put<uint64_t>(a.bytes_, count);
    a.bytes_.insert(a.bytes_.end(), p, p + *nbytes);
    return a;
}

Array Array::strings(const std::vector<std::string>& items) {
    Array a;
    a.elem_ = ValueType::string;
    a.count_ = items.size();
    put<uint32_t>(a.bytes_, uint32_t(ValueType::string));
    put<uint64_t>(a.bytes_, items.size());
    for (const auto& s : items) put_string(a.bytes_, s);
    return a;
}

Array Array::arrays(const std::vector<Array>& items) {
    Array a;
    a.elem_ = ValueType::array;
    a.count_ = items.size();
    put<uint32_t>(a.bytes_, uint32_t(ValueType::array));
    put<uint64_t>(a.bytes_, items.size());
    for (const auto& item : items) a.bytes_.insert(a.bytes_.end(), item.bytes_.begin(), item.bytes_.end());
    return a;
}

void Writer::set(std::string_view key, ValueType type, std::vector<uint8_t> payload) {
    if (key.empty()) bad("empty key");
    for (auto& kv : kvs_)
        if (kv.key == key) {
            kv.type = type;
            kv.payload = std::move(payload);
            return;
        }
    kvs_.push_back(Kv{std::string(key), type, std::move(payload)});
}

void Writer::set_u8(std::string_view k, uint8_t v) { set(k, ValueType::u8, scalar(v)); }
void Writer::set_i8(std::string_view k, int8_t v) { set(k, ValueType::i8, scalar(v)); }
void Writer::set_u16(std::string_view k, uint16_t v) { set(k, ValueType::u16, scalar(v)); }
void Writer::set_i16(std::string_view k, int16_t v) { set(k, ValueType::i16, scalar(v)); }
void Writer::set_u32(std::string_view k, uint32_t v) { set(k, ValueType::u32, scalar(v)); }
void Writer::set_i32(std::string_view k, int32_t v) { set(k, ValueType::i32, scalar(v)); }
void Writer::set_u64(std::string_view k, uint64_t v) { set(k, ValueType::u64, scalar(v)); }
void Writer::set_i64(std::string_view k, int64_t v) { set(k, ValueType::i64, scalar(v)); }
void Writer::set_f32(std::string_view k, float v) { set(k, ValueType::f32, scalar(v)); }
void Writer::set_f64(std::string_view k, double v) { set(k, ValueType::f64, scalar(v)); }
void Writer::set_bool(std::string_view k, bool v) { set(k, ValueType::boolean, scalar(uint8_t(v ? 1 : 0))); }

void Writer::set_string(std::string_view k, std::string_view v) {
    std::vector<uint8_t> p;
    put_string(p, v);
    set(k, ValueType::string, std::move(p));
}

void Writer::set_array(std::string_view k, const Array& a) { set(k, ValueType::array, a.encoded()); }

void Writer::set_array(std::string_view k, ValueType elem, const void* data, uint64_t count) {
    set_array(k, Array::of(elem, data, count));
}

void Writer::set_string_array(std::string_view k, const std::vector<std::string>& items) {
    set_array(k, Array::strings(items));
}

void Writer::set_value(std::string_view k, const Value& v) {
    auto raw = v.raw();
    set(k, v.type(), std::vector<uint8_t>(raw.begin(), raw.end()));
}

void Writer::remove(std::string_view key) {
    std::erase_if(kvs_, [&](const Kv& kv) { return kv.key == key; });
}

void Writer::add_tensor(std::string_view name, uint32_t type, uint32_t n_dims, const int64_t* ne,
                        std::span<const uint8_t> bytes) {
    if (name.empty() || name.size() >= kMaxTensorName)
        bad("tensor name '" + std::string(name) + "' must be 1.." + to_string(kMaxTensorName - 1) + " bytes");
    for (const auto& t : tensors_)
        if (t.name == name) bad("duplicate tensor name '" + std::string(name) + "'");
    if (!ggml_type_usable(type)) bad("tensor '" + std::string(name) + "': unusable ggml type id " + to_string(type));
    if (n_dims > kMaxDims || (n_dims && !ne)) bad("tensor '" + std::string(name) + "': bad n_dims " + to_string(n_dims));
    Tensor t{std::string(name), type, n_dims, {1, 1, 1, 1}, {}};
    for (uint32_t d = 0; d < n_dims; ++d) t.ne[d] = ne[d];
    auto nbytes = ggml_nbytes(type, 4, t.ne);
    if (!nbytes)
        bad("tensor '" + std::string(name) + "': invalid shape for " + ggml_type_name(type) +
            " (negative dimension, row not a multiple of the block size, or overflow)");
    if (*nbytes != bytes.size())
        bad("tensor '" + std::string(name) + "': " + to_string(bytes.size()) + " bytes given, shape and type need " +
            to_string(*nbytes));
    t.bytes.assign(bytes.begin(), bytes.end());
    tensors_.push_back(std::move(t));
}

std::vector<uint8_t> Writer::build(const std::vector<Kv>& kvs, size_t first, size_t last) const {
    uint64_t alignment = kDefaultAlignment;
    for (const auto& kv : kvs)
        if (kv.key == "general.alignment") {
            uint32_t a = 0;
            if (kv.type != ValueType::u32) bad("general.alignment must be u32");
            std::memcpy(&a, kv.payload.data(), 4);
            if (a == 0 || (a & (a - 1))) bad("general.alignment " + to_string(a) + " is not a power of two");
            alignment = a;
        }
    std::vector<uint8_t> out;
    out.insert(out.end(), {'G', 'G', 'U', 'F'});
    put<uint32_t>(out, 3);
    put<int64_t>(out, int64_t(last - first));
    put<int64_t>(out, int64_t(kvs.size()));
    for (const auto& kv : kvs) {
        put_string(out, kv.key);
        put<uint32_t>(out, uint32_t(kv.type));
        out.insert(out.end(), kv.payload.begin(), kv.payload.end());
    }
    uint64_t offset = 0;
    for (size_t i = first; i < last; ++i) {
        const Tensor& t = tensors_[i];
        put_string(out, t.name);
        put<uint32_t>(out, t.n_dims);
        for (uint32_t d = 0; d < t.n_dims; ++d) put<int64_t>(out, t.ne[d]);
        put<uint32_t>(out, t.type);
        put<uint64_t>(out, offset);
        offset = *util::checked_align_up(offset + t.bytes.size(), alignment);
    }
    pad_to(out, alignment);
    for (size_t i = first; i < last; ++i) {
        out.insert(out.end(), tensors_[i].bytes.begin(), tensors_[i].bytes.end());
        pad_to(out, alignment);  // every tensor padded, as ggml writes them
    }
    return out;
}

std::vector<uint8_t> Writer::to_bytes() const { return build(kvs_, 0, tensors_.size()); }

std::vector<std::string> Writer::shard_paths(const std::string& path, size_t n_shards) {
    if (n_shards == 0 || n_shards > 99999) bad("shard count " + to_string(n_shards) + " must be 1..99999");
    if (n_shards == 1) return {path};
    if (path.size() < 5 || path.compare(path.size() - 5, 5, ".gguf") != 0)
        bad("split output path '" + path + "' must end in .gguf");
    const std::string prefix = path.substr(0, path.size() - 5);
    std::vector<std::string> out;
    for (size_t k = 1; k <= n_shards; ++k) out.push_back(split_file_name(prefix, uint32_t(k), uint32_t(n_shards)));
    return out;
}

std::vector<std::string> Writer::write(const std::string& path, size_t n_shards) const {
    const auto paths = shard_paths(path, n_shards);
    std::vector<std::vector<uint8_t>> files;
    if (n_shards == 1) {
        files.push_back(to_bytes());
    } else {
        if (n_shards > 65535) bad("split.count is a u16: at most 65535 shards");
        if (tensors_.size() > uint64_t(INT32_MAX)) bad("too many tensors for split.tensors.count (i32)");
        // Shard boundaries: tensor i goes to the shard holding the middle of its bytes, so the
        // shards' byte counts are balanced while the tensor order is kept.
        uint64_t total = 0;
        for (const auto& t : tensors_) total += t.bytes.size();
        std::vector<size_t> begin(n_shards + 1, tensors_.size());
        begin[0] = 0;
        uint64_t before = 0;
        size_t shard = 0;
        for (size_t i = 0; i < tensors_.size(); ++i) {
            const double mid = total ? (double(before) + double(tensors_[i].bytes.size()) / 2) / double(total)
                                     : (double(i) + 0.5) / double(tensors_.size());
            const size_t s = std::min(n_shards - 1, size_t(mid * double(n_shards)));
            while (shard < s) begin[++shard] = i;
            before += tensors_[i].bytes.size();
        }
        for (size_t k = 0; k < n_shards; ++k) {
            std::vector<Kv> kvs;
            if (k == 0)
                for (const auto& kv : kvs_)
                    if (kv.key.rfind("split.", 0) != 0) kvs.push_back(kv);
            kvs.push_back(Kv{"split.no", ValueType::u16, scalar(uint16_t(k))});
            kvs.push_back(Kv{"split.count", ValueType::u16, scalar(uint16_t(n_shards))});
            kvs.push_back(Kv{"split.tensors.count", ValueType::i32, scalar(int32_t(tensors_.size()))});
            files.push_back(build(kvs, begin[k], begin[k + 1]));
        }
    }
    // All or nothing: every shard is complete under its temporary name before any is renamed.
    std::vector<std::string> temps;
    try {
        for (size_t k = 0; k < files.size(); ++k) temps.push_back(write_temp(paths[k], files[k]));
        for (size_t k = 0; k < temps.size(); ++k) {
            if (std::rename(temps[k].c_str(), paths[k].c_str()) != 0)
                fail(Status::io, paths[k] + ": cannot rename into place: " + std::strerror(errno));
            temps[k].clear();
        }
    } catch (...) {
        for (const auto& t : temps)
            if (!t.empty()) std::remove(t.c_str());
        throw;
    }
    return paths;
}

}  // namespace strata::gguf
