// The head's plan as executed and its link counters, as JSON for reports (strata_pipeline_*_json).
// Configured and observed socket settings are separate objects, never merged.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipeline/head_link.hpp"

namespace strata::exec {
class Context;
}

namespace strata::pipeline {
struct HeadOptions;
}

namespace strata::pipeline::detail {

std::string plan_json(const exec::Context& head, const std::vector<LayerRange>& plan, const std::string& planned_by,
                      const std::vector<std::shared_ptr<Link>>& links, const HeadOptions& options);
std::string stats_json(const std::vector<std::shared_ptr<Link>>& links, double head_compute_seconds,
                       uint64_t forward_calls);

}  // namespace strata::pipeline::detail
