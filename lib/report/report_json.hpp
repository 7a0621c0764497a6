// The report file: serialization of the model to schema "strata.report/1", and the validator
// that checks a report text against the rules lib/report/schema/report.schema.json states
// (plus the arithmetic the schema cannot state, such as totals matching their parts).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/report.hpp"

namespace strata::report {

// The report as JSON (2-space indent). Fills created_utc when empty. Throws Error
// invalid_argument when a free section element is not a JSON object, or when the result does not
// validate (the message lists the problems): a report that would not validate is never written.
std::string report_to_json(const Report& report);

// Every problem found, each as "path: what is wrong" ("/artifact/shards/0/sha256: expected 64
// lower-case hex digits"); empty when the text is a valid report. Any input is safe.
std::vector<std::string> validate_report_json(std::string_view text);

// The current time as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now_iso8601();

}  // namespace strata::report
