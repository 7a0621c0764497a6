// One benchmark run: a reset sequence, a prompt of exactly the stated number of tokens (token ids,
// so no tokenizer round trip changes the count), then greedy generation of the stated number of
// tokens with a timestamp for every token. Counts are as the library reports them, not as asked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/strata.hpp"

namespace bench {

struct RunResult {
    int64_t prompt_tokens = 0;  // tokens actually prefilled
    int64_t output_tokens = 0;  // tokens actually generated
    double prefill_s = 0;       // wall time of the prompt's decode
    double decode_s = 0;        // wall time of generation, first sample to last token
    std::vector<double> token_times_s;  // per generated token, seconds since the run started
    std::vector<int32_t> output_token_ids;  // the generated tokens, so runs can be compared exactly
    std::string stop_reason;
    std::string output_text;  // the generated tokens' bytes
};

// `n` token ids of ordinary text (no special tokens but an optional leading BOS), cycling through
// a fixed passage: the same prompt for every repeat.
std::vector<int32_t> filler_tokens(strata::model& m, size_t n, bool with_bos);

// Runs prompt then `gen_tokens` tokens; the sampler (may be null) gets the context length.
RunResult run_once(strata::session& s, const std::vector<int32_t>& prompt, int32_t gen_tokens,
                   strata::reports::memory_sampler* sampler);

// Decode timed at a depth without prefilling it again: the session holds `prompt` (run_once
// decoded it), keeps all of it but the last token, decodes that token again (untimed, so the
// last logits are fresh) and generates `gen_tokens` from there, as run_once does. Sequences that
// cannot truncate (recurrent KDA layers) throw strata::error (STRATA_ERR_UNSUPPORTED). The result
// has prefill_s 0: no prefill was timed.
RunResult run_at_depth(strata::session& s, const std::vector<int32_t>& prompt, int32_t gen_tokens,
                       strata::reports::memory_sampler* sampler);

nlohmann::ordered_json run_json(const RunResult& r, const std::string& label, bool warmup);

}  // namespace bench
