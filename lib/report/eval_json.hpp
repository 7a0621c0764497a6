// An evaluation as a report section ("evaluations" element): the record with its score, and the
// record read back from such an element (for compare), checked rather than trusted.
#pragma once

#include <string>
#include <string_view>

#include "report/eval_score.hpp"

namespace strata::report {

// The record, its rounds and its score (score_evaluation, summary included) as one JSON object.
// Throws as score_evaluation does.
std::string eval_record_json(const EvalRecord& record);

// Reads an "evaluations" element back. Throws Error format naming the field on anything
// malformed, and invalid_argument when the history breaks the rules.
EvalRecord parse_eval_record(std::string_view json_text);

}  // namespace strata::report
