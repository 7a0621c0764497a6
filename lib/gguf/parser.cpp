#include "gguf/parser.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <unordered_set>

#include "gguf/ggml_types.hpp"
#include "gguf/model_file.hpp"
#include "util/checked.hpp"
#include "util/error.hpp"

namespace strata::gguf::detail {
namespace {

using std::to_string;

// Smallest encodings, used to refuse impossible counts before allocating anything.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;          // empty key, type, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims 0, type, offset

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

class Reader {
public:
    Reader(const ParsedFile& f) : base_(f.file.data()), size_(f.file.size()), name_(f.name) {}

    uint64_t pos() const { return pos_; }
    uint64_t left() const { return size_ - pos_; }
    const uint8_t* here() const { return base_ + pos_; }

    [[noreturn]] void bad(const std::string& what, Status s = Status::format) const {
        fail(s, name_ + ": " + what);
    }

    // `what` is a callable returning the description; built only on failure.
    template <typename What>
    void need(uint64_t n, What&& what) const {
        if (n > left())
            bad("unexpected end of file at byte " + to_string(pos_) + " (file size " + to_string(size_) +
                ") while reading " + what());
    }
    template <typename T, typename What>
    T read(What&& what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, base_ + pos_, sizeof v);
        pos_ += sizeof v;
        return v;
    }
    void skip(uint64_t n) { pos_ += n; }

private:
    const uint8_t* base_;
    uint64_t size_;
    const std::string& name_;
    uint64_t pos_ = 0;
};

class Parser {
public:
    explicit Parser(ParsedFile& f) : f_(f), r_(f) {}

    void run() {
        header();
        metadata();
        alignment();
        tensor_infos();
        tensor_data();
    }

private:
    ParsedFile& f_;
    Reader r_;
    uint64_t n_tensors_ = 0, n_kv_ = 0;

    void header() {
        if (f_.file.size() == 0) r_.bad("the file is empty (0 bytes), not a GGUF file");
        if (f_.file.size() < 4)
            r_.bad("file of " + to_string(f_.file.size()) + " bytes is too short for the GGUF magic");
        if (std::memcmp(r_.here(), "GGUF", 4) != 0) {
            std::string magic;
            for (int i = 0; i < 4; ++i) {
                const char c = char(r_.here()[i]);
                magic += (c >= 0x20 && c < 0x7F) ? std::string(1, c) : "\\x" + to_string(uint8_t(c));
            }
            r_.bad("bad magic \"" + magic + "\" (expected \"GGUF\"): not a GGUF file");
        }
        r_.skip(4);
        f_.version = r_.read<uint32_t>([] { return std::string("the version"); });
        const uint32_t v = f_.version;
        if (v == 0 || v == 1)
            r_.bad("GGUF version " + to_string(v) + " is not supported (too old: strata reads versions 2 and 3)",
                   Status::unsupported);
        if (v > 3 && (v & 0xFFFF) == 0)
            r_.bad("GGUF version field " + to_string(v) + " looks byte-swapped: big-endian GGUF files are not supported",
                   Status::unsupported);
        if (v > 3)
            r_.bad("GGUF version " + to_string(v) + " is newer than the newest supported version 3",
                   Status::unsupported);
        const auto n_tensors = r_.read<int64_t>([] { return std::string("the tensor count"); });
        const auto n_kv = r_.read<int64_t>([] { return std::string("the key-value count"); });
        if (n_tensors < 0) r_.bad("negative tensor count " + to_string(n_tensors));
        if (n_kv < 0) r_.bad("negative key-value count " + to_string(n_kv));
        n_tensors_ = uint64_t(n_tensors);
        n_kv_ = uint64_t(n_kv);
        // Bound both counts by the bytes left, so that nothing is reserved for a lie.
        if (n_kv_ > r_.left() / kMinKvBytes)
            r_.bad("key-value count " + to_string(n_kv_) + " is impossible: the " + to_string(r_.left()) +
                   " bytes after the header hold at most " + to_string(r_.left() / kMinKvBytes) +
                   " key-value pairs");
        if (n_tensors_ > r_.left() / kMinTensorInfoBytes)
            r_.bad("tensor count " + to_string(n_tensors_) + " is impossible: the " + to_string(r_.left()) +
                   " bytes after the header hold at most " + to_string(r_.left() / kMinTensorInfoBytes) +
                   " tensor infos");
        if (n_kv_ * kMinKvBytes + n_tensors_ * kMinTensorInfoBytes > r_.left())
            r_.bad("key-value count " + to_string(n_kv_) + " and tensor count " + to_string(n_tensors_) +
                   " need at least " + to_string(n_kv_ * kMinKvBytes + n_tensors_ * kMinTensorInfoBytes) +
                   " bytes but only " + to_string(r_.left()) + " are left: truncated file or wrong counts");
    }

    // A GGUF string at the cursor; `what` names it for messages.
    template <typename What>
    std::string_view string(What&& what) {
        const auto len = r_.read<uint64_t>([&] { return "the length of " + what(); });
        if (len > r_.left())
            r_.bad("string length " + to_string(len) + " of " + what() + " at byte " + to_string(r_.pos() - 8) +
                   " runs past the end of the file (" + to_string(r_.left()) + " bytes left)");
        std::string_view s(reinterpret_cast<const char*>(r_.here()), len);
        r_.skip(len);
        return s;
    }

    static bool valid_type(uint32_t t) { return t < kValueTypeCount; }

    // Parses one value of type `type` into `node`. `key` and `depth` are for messages/limits.
    void value(Node& node, ValueType type, std::string_view key, uint32_t depth) {
        node.type = type;
        node.raw = r_.here();
        const uint64_t start = r_.pos();
        auto what = [&] { return "the value of key " + quoted(key); };
        if (type == ValueType::string) {
            auto s = string(what);
            node.data = reinterpret_cast<const uint8_t*>(s.data());
            node.count = s.size();
        } else if (type == ValueType::array) {
            array(node, key, depth);
        } else {
            const uint32_t n = value_type_size(type);
            r_.need(n, what);
            node.data = r_.here();
            if (type == ValueType::boolean && node.data[0] > 1)
                r_.bad("key " + quoted(key) + " has bool value " + to_string(node.data[0]) + " (must be 0 or 1)");
            r_.skip(n);
        }
        node.raw_size = r_.pos() - start;
    }

    void array(Node& node, std::string_view key, uint32_t depth) {
        const uint32_t elem = r_.read<uint32_t>([&] { return "the element type of array " + quoted(key); });
        if (!valid_type(elem))
            r_.bad("array " + quoted(key) + " has invalid element type " + to_string(elem) + " (valid: 0..12)");
        if (elem == uint32_t(ValueType::array) && depth + 1 >= kMaxArrayDepth)
            r_.bad("array " + quoted(key) + " nests arrays deeper than " + to_string(kMaxArrayDepth) + " levels");
        const auto count = r_.read<uint64_t>([&] { return "the element count of array " + quoted(key); });
        node.elem = ValueType(elem);
        node.count = count;
        const uint32_t fixed = value_type_size(node.elem);
        const uint64_t min_size = fixed ? fixed : (node.elem == ValueType::string ? 8 : 12);
        if (count > r_.left() / min_size)
            r_.bad("array " + quoted(key) + " claims " + to_string(count) + " elements of " +
                   value_type_name(node.elem) + " (" + to_string(min_size) + " bytes each at least), but only " +
                   to_string(r_.left()) + " bytes are left in the file");
        node.data = r_.here();
        if (fixed) {
            if (node.elem == ValueType::boolean)
                for (uint64_t i = 0; i < count; ++i)
                    if (node.data[i] > 1)
                        r_.bad("array " + quoted(key) + " element " + to_string(i) + " has bool value " +
                               to_string(node.data[i]) + " (must be 0 or 1)");
            r_.skip(count * fixed);
            return;
        }
        auto block = std::make_unique<Node[]>(count);
        for (uint64_t i = 0; i < count; ++i) value(block[i], node.elem, key, depth + 1);
        node.children = block.get();
        f_.child_blocks.push_back(std::move(block));
    }

    void metadata() {
        f_.keys.reserve(n_kv_);
        f_.values.resize(n_kv_);
        std::unordered_map<std::string_view, uint64_t> seen;
        seen.reserve(n_kv_);
        for (uint64_t i = 0; i < n_kv_; ++i) {
            auto key = string([&] {
                return "the key of key-value pair #" + to_string(i) +
                       (i ? " (after " + quoted(f_.keys[i - 1]) + ")" : std::string());
            });
            if (key.empty()) r_.bad("key-value pair #" + to_string(i) + " has an empty key");
            f_.keys.emplace_back(key);
            const std::string_view k = f_.keys.back();  // reserved: no reallocation moves it
            if (auto [it, fresh] = seen.emplace(k, i); !fresh)
                r_.bad("duplicate key " + quoted(k) + " (key-value pairs #" + to_string(it->second) + " and #" +
                       to_string(i) + ")");
            const auto type = r_.read<uint32_t>([&] { return "the value type of key " + quoted(k); });
            if (!valid_type(type))
                r_.bad("key " + quoted(k) + " has invalid value type " + to_string(type) + " (valid: 0..12)");
            value(f_.values[i], ValueType(type), k, 0);
        }
    }

    void alignment() {
        const long i = f_.find("general.alignment");
        if (i < 0) return;
        const Value v(&f_.values[size_t(i)]);
        if (v.type() != ValueType::u32)
            r_.bad(std::string("general.alignment has type ") + value_type_name(v.type()) + ", must be u32");
        const uint64_t a = *v.as_uint();
        if (a == 0) r_.bad("general.alignment is 0");
        if ((a & (a - 1)) != 0) r_.bad("general.alignment " + to_string(a) + " is not a power of two");
        f_.alignment = uint32_t(a);
    }

    void tensor_infos() {
        f_.tensors.resize(n_tensors_);
        std::unordered_set<std::string_view> names;
        names.reserve(n_tensors_);
        for (uint64_t i = 0; i < n_tensors_; ++i) {
            ParsedTensor& t = f_.tensors[i];
            auto name = string([&] { return "the name of tensor #" + to_string(i); });
            if (name.size() >= kMaxTensorName)
                r_.bad("tensor #" + to_string(i) + " name is " + to_string(name.size()) + " bytes long (at most " +
                       to_string(kMaxTensorName - 1) + ")");
            t.name = name;
            const std::string& n = t.name;  // stable: f_.tensors is never resized again
            if (!names.insert(n).second) r_.bad("duplicate tensor name " + quoted(n));
            t.n_dims = r_.read<uint32_t>([&] { return "n_dims of tensor " + quoted(n); });
            if (t.n_dims > kMaxDims)
                r_.bad("tensor " + quoted(n) + " has " + to_string(t.n_dims) + " dimensions (at most " +
                       to_string(kMaxDims) + ")");
            for (uint32_t d = 0; d < t.n_dims; ++d) {
                t.ne[d] = r_.read<int64_t>([&] { return "ne[" + to_string(d) + "] of tensor " + quoted(n); });
                if (t.ne[d] < 0)
                    r_.bad("tensor " + quoted(n) + " has negative dimension ne[" + to_string(d) +
                           "] = " + to_string(t.ne[d]));
            }
            t.type = r_.read<uint32_t>([&] { return "the type of tensor " + quoted(n); });
            t.offset = r_.read<uint64_t>([&] { return "the offset of tensor " + quoted(n); });
            check_shape(t);
        }
    }

    void check_shape(ParsedTensor& t) {
        const GgmlTypeInfo* info = ggml_type_info(t.type);
        if (!info)
            r_.bad("tensor " + quoted(t.name) + " has unknown ggml type id " + to_string(t.type) + " (known: 0.." +
                       to_string(kGgmlTypeCount - 1) + ")",
                   Status::unsupported);
        if (!ggml_type_usable(t.type))
            r_.bad("tensor " + quoted(t.name) + " has ggml type id " + to_string(t.type) + " (" + info->name +
                       "), which was removed from ggml and may not appear in GGUF files",
                   Status::unsupported);
        if (uint64_t(t.ne[0]) % info->block_size != 0)
            r_.bad("tensor " + quoted(t.name) + " row length ne[0] = " + to_string(t.ne[0]) +
                   " is not a multiple of the " + info->name + " block size " + to_string(info->block_size));
        uint64_t n = 1;
        for (uint32_t d = 0; d < 4; ++d) {
            auto m = util::checked_mul(n, uint64_t(t.ne[d]));
            if (!m || *m > uint64_t(INT64_MAX))
                r_.bad("tensor " + quoted(t.name) + " element count overflows");
            n = *m;
        }
        t.n_elements = n;
        auto nbytes = ggml_nbytes(t.type, 4, t.ne);
        if (!nbytes) r_.bad("tensor " + quoted(t.name) + " byte size overflows");
        t.nbytes = *nbytes;
    }

    void tensor_data() {
        auto data = util::checked_align_up(r_.pos(), f_.alignment);
        if (!data) r_.bad("data section offset overflows");
        f_.data_offset = *data;
        const uint64_t size = f_.file.size();
        for (const ParsedTensor& t : f_.tensors) {
            if (t.offset % f_.alignment != 0)
                r_.bad("tensor " + quoted(t.name) + " offset " + to_string(t.offset) +
                       " is not a multiple of the alignment " + to_string(f_.alignment));
            auto begin = util::checked_add(f_.data_offset, t.offset);
            auto end = begin ? util::checked_add(*begin, t.nbytes) : std::nullopt;
            if (!end || *end > size)
                r_.bad("tensor " + quoted(t.name) + " (" + ggml_type_name(t.type) + ", " + to_string(t.nbytes) +
                       " bytes at data offset " + to_string(t.offset) + ") ends " +
                       (end ? "at byte " + to_string(*end) : std::string("past 2^64")) +
                       ", past the end of the file (" + to_string(size) + " bytes)");
        }
        // Gaps are allowed (the format permits them); overlaps are not.
        std::vector<size_t> order(f_.tensors.size());
        std::iota(order.begin(), order.end(), size_t(0));
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            const auto &ta = f_.tensors[a], &tb = f_.tensors[b];
            return ta.offset != tb.offset ? ta.offset < tb.offset : ta.nbytes < tb.nbytes;
        });
        // Track the tensor reaching furthest so far, so zero-size tensors do not hide overlaps.
        const ParsedTensor* reach = nullptr;
        for (size_t k : order) {
            const ParsedTensor& cur = f_.tensors[k];
            if (cur.nbytes == 0) continue;
            if (reach && reach->offset + reach->nbytes > cur.offset)
                r_.bad("tensors " + quoted(reach->name) + " (data offset " + to_string(reach->offset) + ", " +
                       to_string(reach->nbytes) + " bytes) and " + quoted(cur.name) + " (data offset " +
                       to_string(cur.offset) + ") overlap");
            if (!reach || cur.offset + cur.nbytes > reach->offset + reach->nbytes) reach = &cur;
        }
    }
};

}  // namespace

long ParsedFile::find(std::string_view key) const {
    for (size_t i = 0; i < keys.size(); ++i)
        if (keys[i] == key) return long(i);
    return -1;
}

std::unique_ptr<ParsedFile> parse(MappedFile bytes, const std::string& name) {
    auto f = std::make_unique<ParsedFile>(std::move(bytes));
    f->name = name;
    Parser(*f).run();
    return f;
}

}  // namespace strata::gguf::detail
