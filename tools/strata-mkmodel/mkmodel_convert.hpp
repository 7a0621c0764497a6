// Converting float32 values to the bytes a GGUF file stores for a type, one slice at a time, for
// strata-mkmodel's expert tensors (too big to hold as float32 whole: Kimi K2's are 5.6 G values).
//
// strata.h has no call that quantizes into memory: strata_writer_add_tensor_f32 converts, but the
// writer keeps the bytes until it writes a file. So a slice goes through a scratch one-tensor GGUF
// file in a private temporary folder ($TMPDIR, else /tmp), written by a strata::writer and read
// back memory-mapped by strata::model. The bytes are the library's own conversion, and since
// strata converts every row on its own (iq1_s included), the slices' bytes laid end to end are
// exactly what converting the whole tensor gives. Public headers only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "mkmodel_plan.hpp"

namespace mkmodel {

class SliceConverter {
public:
    SliceConverter() = default;
    SliceConverter(const SliceConverter&) = delete;
    SliceConverter& operator=(const SliceConverter&) = delete;
    ~SliceConverter();  // removes the scratch folder

    // Appends the `type` bytes of `values` (shape `ne`, innermost first) to `out`.
    void append(int type, const std::vector<int64_t>& ne, const float* values, std::vector<uint8_t>& out);

private:
    std::filesystem::path dir_;  // made on first use
    uint64_t n_files_ = 0;
};

// The file bytes of a per-slice tensor, made and converted one ne[2] slice at a time (slice s+1 is
// generated on another thread while slice s is converted): peak memory is two slices as float32
// plus the converted tensor. `progress(done)` is called after each slice.
std::vector<uint8_t> convert_per_slice(const TensorSpec& spec, uint64_t seed, SliceConverter& converter,
                                       const std::function<void(int64_t)>& progress);

}  // namespace mkmodel
