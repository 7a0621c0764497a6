// libFuzzer target: any byte string given to the GGUF reader either parses or throws
// strata::Error; it never crashes, reads out of bounds, hangs or allocates without bound.
// Whatever parses is walked completely (every value rendered, every tensor byte touched, the
// first row of every tensor of a type strata decodes dequantized and dotted: any bytes, NaN
// scales too).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gguf/model_file.hpp"
#include "quant/formats.hpp"
#include "quant/type_traits.hpp"
#include "util/error.hpp"

namespace {

// The product kernels read the same untrusted blocks: the first row dotted with activations of
// ordinary size (they come from the model's own computation, not the file) quantized to the type
// ggml pairs with the weights, by the scalar reference and the kernel this CPU runs.
size_t dot_first_row(uint32_t type, const uint8_t* blocks, std::vector<float>& x, int64_t n) {
    const strata::quant::TypeTraits* traits = strata::quant::find_type_traits(type);
    if (!traits || !traits->dot_scalar) return 0;
    uint32_t s = 12345;
    for (float& v : x) {
        s = s * 1664525u + 1013904223u;
        v = float(int32_t(s)) * 0x1p-31f;  // [-1, 1)
    }
    std::vector<uint8_t> act(strata::quant::row_size(traits->dot_type, n));
    strata::quant::quantize_row(traits->dot_type, x.data(), act.data(), n, nullptr);
    const float a = traits->dot_scalar(n, blocks, act.data());
    const float b = strata::quant::best_vec_dot(*traits)(n, blocks, act.data());
    return size_t(a == b) + size_t(a > 0.0f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        auto model = strata::gguf::ModelFile::parse_memory(std::span<const uint8_t>(data, size), "fuzz.gguf");
        size_t sink = 0;
        for (size_t i = 0; i < model->metadata_count(); ++i) {
            sink += model->metadata_key(i).size();
            sink += model->metadata_value(i).to_json().size();
        }
        for (const auto& t : model->tensors()) {
            // Touch the first and last byte: ASan reports any range past the buffer.
            if (t.nbytes) sink += t.data[0] + t.data[t.nbytes - 1];
            sink += model->find_tensor(t.name).value_or(0);
            // The reader checked nbytes against the type table, so a tensor holding any element
            // holds a whole first row (one with a zero dimension holds no bytes at all).
            if (strata::quant::is_supported(t.type) && t.n_elements > 0 && t.ne[0] > 0 && t.ne[0] <= (1 << 16) &&
                strata::quant::row_size(t.type, t.ne[0]) <= t.nbytes) {
                std::vector<float> row(static_cast<size_t>(t.ne[0]));
                strata::quant::dequantize_row(t.type, t.data, row.data(), t.ne[0]);
                sink += size_t(row.back() == 0.0f);
                sink += dot_first_row(t.type, t.data, row, t.ne[0]);
            }
        }
        if (sink == 0x5eed) return 0;  // keep the walk from being optimized away
    } catch (const strata::Error&) {
    }
    return 0;
}
