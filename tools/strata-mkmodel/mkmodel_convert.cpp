// Slice-at-a-time conversion for strata-mkmodel (see mkmodel_convert.hpp).
#include "mkmodel_convert.hpp"

#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <system_error>

#include "mkmodel_values.hpp"
#include "strata/strata.hpp"

namespace mkmodel {

SliceConverter::~SliceConverter() {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

void SliceConverter::append(int type, const std::vector<int64_t>& ne, const float* values, std::vector<uint8_t>& out) {
    int64_t count = 1;
    for (int64_t d : ne) count *= d;
    if (type == STRATA_TYPE_F32) {  // already the file's bytes
        const auto* bytes = reinterpret_cast<const uint8_t*>(values);
        out.insert(out.end(), bytes, bytes + count * int64_t(sizeof(float)));
        return;
    }
    if (dir_.empty()) {
        std::string pattern = (std::filesystem::temp_directory_path() / "strata-mkmodel-XXXXXX").string();
        if (!mkdtemp(pattern.data()))
            throw strata::error(STRATA_ERR_IO, "cannot make a scratch folder like " + pattern + ": " +
                                                   std::strerror(errno));
        dir_ = pattern;
    }
    const std::string path = (dir_ / ("slice-" + std::to_string(n_files_++) + ".gguf")).string();
    {
        strata::writer scratch;
        scratch.add_tensor("slice", type, ne, values);
        scratch.write(path);
    }
    {
        strata::model::params params;
        params.use_digest_cache = false;
        const strata::model m(path, params);
        const auto [data, n_bytes] = m.tensor_data(0);
        const auto* bytes = static_cast<const uint8_t*>(data);
        out.insert(out.end(), bytes, bytes + n_bytes);
    }
    std::filesystem::remove(path);
}

std::vector<uint8_t> convert_per_slice(const TensorSpec& spec, uint64_t seed, SliceConverter& converter,
                                       const std::function<void(int64_t)>& progress) {
    const int64_t n_slices = spec.shape[2];
    const std::vector<int64_t> slice_ne{spec.shape[0], spec.shape[1]};
    std::vector<uint8_t> bytes;
    std::future<std::vector<float>> next = std::async(std::launch::async, make_slice, std::cref(spec), seed, int64_t(0));
    for (int64_t s = 0; s < n_slices; ++s) {
        const std::vector<float> values = next.get();
        if (s + 1 < n_slices) next = std::async(std::launch::async, make_slice, std::cref(spec), seed, s + 1);
        const size_t before = bytes.size();
        converter.append(spec.type, slice_ne, values.data(), bytes);
        if (s == 0) bytes.reserve(size_t(bytes.size() - before) * size_t(n_slices));
        progress(s + 1);
    }
    return bytes;
}

}  // namespace mkmodel
