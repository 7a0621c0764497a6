#include "gguf/model_file.hpp"

#include <algorithm>
#include <unordered_map>

#include "gguf/parser.hpp"
#include "gguf/split_name.hpp"
#include "util/error.hpp"

namespace strata::gguf {

using detail::ParsedFile;
using std::to_string;

struct ModelFile::Impl {
    std::vector<std::unique_ptr<ParsedFile>> files;  // shard order
    std::vector<TensorInfo> tensors;
    std::vector<Shard> shards;
    std::unordered_map<std::string_view, size_t> key_index;
    std::unordered_map<std::string_view, size_t> tensor_index;

    const ParsedFile& first() const { return *files.front(); }
};

namespace {

struct SplitKeys {
    uint32_t no = 0, count = 0;
    int64_t tensors = 0;
};

// The split.* keys of a shard, or nullopt when it has none. Wrong types are format errors.
std::optional<SplitKeys> split_keys(const ParsedFile& f) {
    const long no = f.find("split.no"), count = f.find("split.count"), total = f.find("split.tensors.count");
    if (no < 0 && count < 0 && total < 0) return std::nullopt;
    auto get = [&](long i, const char* key, ValueType want) {
        if (i < 0) fail(Status::format, f.name + ": has some split.* keys but lacks " + std::string(key));
        const Value v(&f.values[size_t(i)]);
        if (v.type() != want)
            fail(Status::format, f.name + ": " + key + " has type " + value_type_name(v.type()) + ", must be " +
                                     value_type_name(want));
        return *v.as_int();
    };
    SplitKeys s;
    s.no = uint32_t(get(no, "split.no", ValueType::u16));
    s.count = uint32_t(get(count, "split.count", ValueType::u16));
    s.tensors = get(total, "split.tensors.count", ValueType::i32);
    if (s.count == 0) fail(Status::format, f.name + ": split.count is 0");
    if (s.no >= s.count)
        fail(Status::format, f.name + ": split.no " + to_string(s.no) + " is not below split.count " +
                                 to_string(s.count));
    return s;
}

std::unique_ptr<ParsedFile> parse_path(const std::string& path) {
    return detail::parse(detail::MappedFile::map(path), path);
}

}  // namespace

ModelFile::ModelFile() : impl_(std::make_unique<Impl>()) {}
ModelFile::~ModelFile() = default;

std::unique_ptr<ModelFile> ModelFile::assemble(std::vector<std::unique_ptr<ParsedFile>> files) {
    std::unique_ptr<ModelFile> m(new ModelFile());
    Impl& impl = *m->impl_;
    if (files.size() > 1) {
        const auto first = split_keys(*files[0]);
        uint64_t total = 0;
        for (size_t i = 0; i < files.size(); ++i) {
            const auto s = split_keys(*files[i]);
            if (!s) fail(Status::format, files[i]->name + ": shard of a split model without split.* keys");
            if (s->count != first->count)
                fail(Status::format, files[i]->name + ": split.count " + to_string(s->count) + " differs from " +
                                         to_string(first->count) + " in " + files[0]->name);
            if (s->tensors != first->tensors)
                fail(Status::format, files[i]->name + ": split.tensors.count " + to_string(s->tensors) +
                                         " differs from " + to_string(first->tensors) + " in " + files[0]->name);
            total += files[i]->tensors.size();
        }
        if (int64_t(total) != first->tensors)
            fail(Status::format, files[0]->name + ": split.tensors.count is " + to_string(first->tensors) +
                                     " but the " + to_string(files.size()) + " shards hold " + to_string(total) +
                                     " tensors");
    } else if (auto s = split_keys(*files[0]); s && s->count != 1) {
        fail(Status::invalid_argument, files[0]->name + ": is shard " + to_string(s->no + 1) + " of " +
                                           to_string(s->count) + " of a split model; pass every shard");
    }
    for (size_t si = 0; si < files.size(); ++si) {
        const ParsedFile& f = *files[si];
        impl.shards.push_back(Shard{f.name, f.file.size(), f.version, f.alignment, f.data_offset, f.keys.size(),
                                    f.tensors.size()});
        for (const auto& t : f.tensors) {
            TensorInfo info;
            info.name = t.name;
            info.type = t.type;
            info.n_dims = t.n_dims;
            std::copy(t.ne, t.ne + 4, info.ne);
            info.offset = t.offset;
            info.nbytes = t.nbytes;
            info.n_elements = t.n_elements;
            info.shard = si;
            info.file_offset = f.data_offset + t.offset;  // checked by the parser
            info.data = f.file.data() + info.file_offset;
            impl.tensors.push_back(std::move(info));
        }
    }
    impl.files = std::move(files);
    for (size_t i = 0; i < impl.first().keys.size(); ++i) impl.key_index.emplace(impl.first().keys[i], i);
    for (size_t i = 0; i < impl.tensors.size(); ++i) {
        if (!impl.tensor_index.emplace(impl.tensors[i].name, i).second)
            fail(Status::format, impl.shards[impl.tensors[i].shard].path + ": tensor '" + impl.tensors[i].name +
                                     "' also appears in an earlier shard");
    }
    return m;
}

std::unique_ptr<ModelFile> ModelFile::open(const std::vector<std::string>& paths) {
    if (paths.empty()) fail(Status::invalid_argument, "ModelFile::open: no paths given");
    std::vector<std::unique_ptr<ParsedFile>> files;
    if (paths.size() == 1) {
        auto first = parse_path(paths[0]);
        const auto keys = split_keys(*first);
        const auto name = parse_split_name(paths[0]);
        files.push_back(std::move(first));
        if (keys && keys->count > 1) {
            if (!name || name->number != 1 || keys->no != 0)
                fail(Status::invalid_argument,
                     paths[0] + ": is shard " + to_string(keys->no + 1) + " of " + to_string(keys->count) +
                         " of a split model; open the first shard (NAME-00001-of-NNNNN.gguf) or pass every shard");
            if (name->count != keys->count)
                fail(Status::format, paths[0] + ": file name says " + to_string(name->count) +
                                         " shards but split.count is " + to_string(keys->count));
            for (uint32_t k = 2; k <= keys->count; ++k) {
                const std::string sibling = split_file_name(name->prefix, k, keys->count);
                auto f = parse_path(sibling);
                const auto s = split_keys(*f);
                if (!s || s->no != k - 1)
                    fail(Status::format, sibling + ": split.no is " + (s ? to_string(s->no) : "missing") +
                                             ", expected " + to_string(k - 1) + " from the file name");
                files.push_back(std::move(f));
            }
        }
    } else {
        std::vector<std::unique_ptr<ParsedFile>> by_no(paths.size());
        for (const auto& p : paths) {
            auto f = parse_path(p);
            const auto s = split_keys(*f);
            if (!s) fail(Status::invalid_argument, p + ": not a shard of a split model (no split.* keys)");
            if (s->count != paths.size())
                fail(Status::invalid_argument, p + ": split.count is " + to_string(s->count) + " but " +
                                                   to_string(paths.size()) + " paths were given");
            if (by_no[s->no])
                fail(Status::invalid_argument, p + ": split.no " + to_string(s->no) + " was already given by " +
                                                   by_no[s->no]->name);
            by_no[s->no] = std::move(f);
        }
        files = std::move(by_no);  // all present: count == paths.size() and no duplicates
    }
    return assemble(std::move(files));
}

std::unique_ptr<ModelFile> ModelFile::parse_memory(std::span<const uint8_t> bytes, std::string name) {
    std::vector<std::unique_ptr<ParsedFile>> files;
    files.push_back(detail::parse(detail::MappedFile::copy(bytes), name));
    return assemble(std::move(files));
}

uint32_t ModelFile::version() const { return impl_->first().version; }

size_t ModelFile::metadata_count() const { return impl_->first().keys.size(); }

std::string_view ModelFile::metadata_key(size_t i) const { return metadata_key_cstr(i); }

const char* ModelFile::metadata_key_cstr(size_t i) const {
    if (i >= metadata_count())
        fail(Status::not_found, "metadata index " + to_string(i) + " out of range (" +
                                    to_string(metadata_count()) + " keys)");
    return impl_->first().keys[i].c_str();
}

Value ModelFile::metadata_value(size_t i) const {
    if (i >= metadata_count())
        fail(Status::not_found, "metadata index " + to_string(i) + " out of range (" +
                                    to_string(metadata_count()) + " keys)");
    return Value(&impl_->first().values[i]);
}

std::optional<size_t> ModelFile::find_key(std::string_view key) const {
    auto it = impl_->key_index.find(key);
    if (it == impl_->key_index.end()) return std::nullopt;
    return it->second;
}

const std::vector<TensorInfo>& ModelFile::tensors() const { return impl_->tensors; }

std::optional<size_t> ModelFile::find_tensor(std::string_view name) const {
    auto it = impl_->tensor_index.find(name);
    if (it == impl_->tensor_index.end()) return std::nullopt;
    return it->second;
}

const std::vector<Shard>& ModelFile::shards() const { return impl_->shards; }

}  // namespace strata::gguf
