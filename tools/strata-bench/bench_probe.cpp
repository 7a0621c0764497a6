#include "bench_probe.hpp"

#include <string>

#include "bench_run.hpp"

namespace bench {

namespace {

using json = nlohmann::ordered_json;

struct Fact {
    std::string subject, value;
};

// Facts a reader cannot guess: made-up subjects with four-digit codes.
const Fact kFacts[] = {{"the amber lighthouse", "4817"}, {"the quiet orchard", "2093"},
                       {"the copper bridge", "7561"},    {"the northern archive", "3348"},
                       {"the silver kiln", "6129"},      {"the painted ferry", "9402"}};
constexpr int32_t kAnswerTokens = 12;

std::vector<int32_t> text_tokens(strata::model& m, const std::string& text) { return m.tokenize(text, false, false); }

}  // namespace

ProbeResult context_probe(strata::model& m, strata::session& s, int64_t n_tokens, const std::vector<double>& depths,
                          int64_t n_ctx, strata::reports::memory_sampler* sampler) {
    ProbeResult out;
    const size_t n_facts = std::min(depths.size(), std::size(kFacts));
    std::vector<std::vector<int32_t>> fact_tokens;
    size_t fact_total = 0;
    for (size_t i = 0; i < n_facts; ++i) {
        fact_tokens.push_back(text_tokens(m, " Note: the code of " + kFacts[i].subject + " is " + kFacts[i].value + ". "));
        fact_total += fact_tokens.back().size();
    }
    json element = {{"name", "context probe " + std::to_string(n_tokens) + " tokens"},
                    {"kind", "context_probe"},
                    {"input_tokens_stated", n_tokens},
                    {"configured_context_tokens", n_ctx},
                    {"method",
                     "one run per depth: filler text with every fact planted at its depth (fraction of the input), "
                     "then a question about one fact, exactly input_tokens_stated tokens in all; greedy decoding of " +
                         std::to_string(kAnswerTokens) +
                         " tokens; recalled when the fact's code appears in the output. Completed: every run "
                         "prefilled the whole input and generated; verified: completed and every fact recalled"}};
    json runs = json::array();
    bool all_completed = true, all_recalled = true;
    int recalled = 0;
    for (size_t q = 0; q < n_facts; ++q) {
        const auto question = text_tokens(m, "\nQuestion: what is the code of " + kFacts[q].subject + "?\nAnswer: the code of " +
                                                 kFacts[q].subject + " is");
        json run = {{"depth", depths[q]}, {"fact", kFacts[q].subject + " = " + kFacts[q].value}};
        const int64_t filler_n = n_tokens - int64_t(fact_total + question.size());
        if (filler_n < 1 + int64_t(n_facts)) {
            run["error"] = "an input of " + std::to_string(n_tokens) + " tokens is too short for the planted facts (" +
                           std::to_string(fact_total) + " tokens) and the question (" + std::to_string(question.size()) +
                           " tokens)";
            all_completed = all_recalled = false;
            runs.push_back(run);
            continue;
        }
        // Filler with each fact inserted where its depth falls; the question closes the input.
        const auto filler = filler_tokens(m, size_t(filler_n), true);
        std::vector<int32_t> input;
        std::vector<int64_t> positions(n_facts);
        size_t next = 0;
        for (size_t i = 0; i <= filler.size(); ++i) {
            while (next < n_facts && i == std::max<size_t>(1, size_t(depths[next] * double(filler.size())))) {
                positions[next] = int64_t(input.size());
                input.insert(input.end(), fact_tokens[next].begin(), fact_tokens[next].end());
                ++next;
            }
            if (i < filler.size()) input.push_back(filler[i]);
        }
        input.insert(input.end(), question.begin(), question.end());
        run["input_tokens"] = int64_t(input.size());
        run["fact_position_tokens"] = positions[q];
        try {
            const RunResult r = run_once(s, input, kAnswerTokens, sampler);
            run["prompt_tokens"] = r.prompt_tokens;
            run["output_tokens"] = r.output_tokens;
            run["prefill_s"] = r.prefill_s;
            run["decode_s"] = r.decode_s;
            run["stop_reason"] = r.stop_reason;
            run["output"] = r.output_text;
            const bool completed = r.prompt_tokens == int64_t(input.size()) && r.output_tokens > 0;
            const bool hit = r.output_text.find(kFacts[q].value) != std::string::npos;
            run["completed"] = completed;
            run["recalled"] = hit;
            all_completed = all_completed && completed;
            all_recalled = all_recalled && hit;
            recalled += hit ? 1 : 0;
        } catch (const strata::error& e) {
            run["error"] = std::string(e.status_name()) + ": " + e.what();
            all_completed = all_recalled = false;
        }
        runs.push_back(run);
    }
    if (all_completed && n_facts > 0) out.completed_tokens = n_tokens;
    out.verified = all_completed && all_recalled && n_facts > 0;
    element["completed_input_tokens"] = out.completed_tokens ? json(*out.completed_tokens) : json(nullptr);
    element["facts_recalled"] = std::to_string(recalled) + " of " + std::to_string(n_facts);
    element["largest_verified_input_tokens"] = out.verified ? json(n_tokens) : json(nullptr);
    element["result"] =
        out.verified ? "verified: all " + std::to_string(n_facts) + " planted facts recalled from a " +
                           std::to_string(n_tokens) + "-token input"
        : all_completed
            ? "NOT verified: the " + std::to_string(n_tokens) + "-token input was completed, but only " +
                  std::to_string(recalled) + " of " + std::to_string(n_facts) +
                  " planted facts were recalled (configured window " + std::to_string(n_ctx) + " tokens)"
            : "NOT completed: at least one depth's run failed (see runs)";
    element["runs"] = runs;
    out.element = element;
    return out;
}

}  // namespace bench
