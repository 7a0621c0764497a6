#include "batch_entry.hpp"

#include <string>
#include <vector>

#include "util/error.hpp"

namespace strata::exec {

void check_entries(std::span<const BatchEntry> entries, int32_t n_seq,
                   const std::function<void(const BatchEntry&)>& check_one) {
    if (entries.empty()) fail(Status::invalid_argument, "decode_batch: no entries");
    std::vector<bool> seen(size_t(n_seq), false);
    for (size_t i = 0; i < entries.size(); ++i) {
        const BatchEntry& e = entries[i];
        const std::string which = "decode_batch entry " + std::to_string(i) + " (sequence " + std::to_string(e.seq) + ")";
        if (e.seq < 0 || e.seq >= n_seq)
            fail(Status::invalid_argument, which + ": the sequences are 0.." + std::to_string(n_seq - 1));
        if (seen[size_t(e.seq)]) fail(Status::invalid_argument, which + ": the sequence appears twice in one call");
        seen[size_t(e.seq)] = true;
        if (e.tokens.empty()) fail(Status::invalid_argument, which + ": no tokens");
        try {
            check_one(e);
        } catch (const Error& err) {
            fail(err.status(), which + ": " + err.what());
        }
    }
}

}  // namespace strata::exec
