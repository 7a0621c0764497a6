// The long-context probe: an input of exactly N tokens (a haystack of filler text with facts
// planted at several depths, then a question about one of them) is actually run, and the answer
// checked. One run per depth, each the full N tokens. The input counts as completed when the
// library prefilled all N tokens and generated the answer; as verified only when every planted
// fact was recalled. A tiny random model recalls nothing: that is the honest result.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/strata.hpp"

namespace bench {

struct ProbeResult {
    nlohmann::ordered_json element;  // the benchmark element, every depth's input and output kept
    std::optional<int64_t> completed_tokens;  // the input length run to the end at every depth
    bool verified = false;                    // completed and every fact recalled
};

ProbeResult context_probe(strata::model& m, strata::session& s, int64_t n_tokens, const std::vector<double>& depths,
                          int64_t n_ctx, strata::reports::memory_sampler* sampler);

}  // namespace bench
