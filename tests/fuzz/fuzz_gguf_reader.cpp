// libFuzzer target: any byte string given to the GGUF reader either parses or throws
// strata::Error; it never crashes, reads out of bounds, hangs or allocates without bound.
// Whatever parses is walked completely (every value rendered, every tensor byte touched, the
// first row of every tensor of a type strata decodes dequantized: any bytes, NaN scales too).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gguf/model_file.hpp"
#include "quant/formats.hpp"
#include "util/error.hpp"

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
            }
        }
        if (sink == 0x5eed) return 0;  // keep the walk from being optimized away
    } catch (const strata::Error&) {
    }
    return 0;
}
