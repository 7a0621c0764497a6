// The report sections strata-bench and strata-eval share: the deployment and transport of the run
// (one local session, or a pipeline described by strata_pipeline_plan_json, configured and
// observed socket settings kept apart), and writing a report as JSON plus Markdown beside it,
// validated before anything is written. Public headers only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "strata/strata.hpp"

namespace report_sections {

using json = nlohmann::ordered_json;

struct Deployment {
    json deployment;  // the "deployment" section
    json transport;   // the "transport" section
};

// The model's "<arch>.<key>" metadata integer, or -1 when absent.
int64_t arch_int(strata::model& m, const std::string& key);

// One process holding every layer.
Deployment local_deployment(strata::model& m, int64_t n_ctx, const std::string& kv_type, int64_t slots = 1,
                            const std::string& backend = "cpu");

// A pipeline as its plan says (the plan is untrusted text: a missing field becomes unknown).
Deployment pipeline_deployment(strata::model& m, const std::string& plan_json, int64_t slots = 1);

// The session a tool runs on, N_CTX and N_THREADS given: the head of a pipeline over
// PIPELINE.workers (PIPE then holds the pipeline), or local when there are none; returns the
// deployment section that describes it.
// DEVICE (strata_device) is where a local session runs.
Deployment open_session(strata::model& m, const strata::pipeline_params& pipeline, int64_t n_ctx, int32_t n_threads,
                        std::optional<strata::pipeline>& pipe, std::optional<strata::session>& session,
                        int32_t device = STRATA_DEVICE_CPU);

// Everything but the free sections; title, memory, benchmarks and evaluations are added by the caller.
json base_sections(strata::model& m, const std::string& title, const Deployment& d);

// Assembles (and so validates) the report, writes PATH and PATH with ".md" in place of ".json"
// (or appended). Throws strata::error when the report does not validate; nothing is written then.
// Returns the Markdown path.
std::string write_report(const json& sections, const std::string& path);

// PATH.json -> PATH.md; anything else -> anything.md
std::string markdown_path(const std::string& json_path);

std::string read_file(const std::string& path);  // throws strata::error STRATA_ERR_IO
void write_file(const std::string& path, const std::string& text);

}  // namespace report_sections
