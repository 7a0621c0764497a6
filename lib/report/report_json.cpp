#include "report/report_json.hpp"

#include <ctime>

#include "report/json_io.hpp"
#include "util/error.hpp"

namespace strata::report {

using nlohmann::json;

namespace {

json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json artifact_json(const Artifact& a) {
    json shards = json::array();
    uint64_t total = 0;
    for (const ShardRecord& s : a.shards) {
        shards.push_back({{"path", s.path}, {"size_bytes", s.size_bytes}, {"sha256", s.sha256}});
        total += s.size_bytes;
    }
    json types = json::array();
    for (const TensorTypeCount& t : a.tensor_types)
        types.push_back({{"type", t.type}, {"count", t.count}, {"bytes", t.bytes}});
    json values = json::object();
    for (const PublisherLabel& l : a.labels) {
        std::string error;
        auto v = parse_untrusted_json(l.value_json, &error);
        values[l.key] = v ? *v : json(l.value_json);  // keep unparsable text as a string
    }
    return {{"shards", shards},
            {"total_size_bytes", total},
            {"model_identity", a.model_identity},
            {"architecture", a.architecture},
            {"tensor_types", types},
            {"labels",
             {{"verified", false},
              {"note", "publisher labels from the GGUF metadata, unverified: identity is model_identity and the "
                       "shard sha256 digests"},
              {"values", values}}}};
}

json runtime_json(const Runtime& r) {
    json gpus = json::array();
    for (const GpuRecord& g : r.cuda.gpus)
        gpus.push_back({{"name", g.name}, {"memory_bytes", g.memory_bytes ? json(g.memory_bytes) : json(nullptr)}});
    return {{"strata_version", r.strata_version},
            {"git_commit", r.git_commit.empty() ? "unknown" : r.git_commit},
            {"build_type", r.build_type},
            {"compiler", {{"id", r.compiler_id}, {"version", r.compiler_version}}},
            {"cxx_flags", r.cxx_flags},
            {"cuda",
             {{"present", r.cuda.present},
              {"absent_reason", r.cuda.present ? json(nullptr) : json(r.cuda.absent_reason)},
              {"runtime_version", text_or_null(r.cuda.runtime_version)},
              {"driver_version", text_or_null(r.cuda.driver_version)},
              {"gpus", gpus}}},
            {"cpu",
             {{"model", r.cpu_model.empty() ? "unknown" : r.cpu_model},
              {"logical_cores", r.logical_cores > 0 ? json(r.logical_cores) : json(nullptr)}}},
            {"host_memory_bytes", r.host_memory_bytes ? json(r.host_memory_bytes) : json(nullptr)},
            {"os", r.os}};
}

json link_settings_json(const LinkSettings& s) {
    json other = json::object();
    for (const auto& [k, v] : s.other) other[k] = v;
    return {{"source", s.source},
            {"send_buffer_bytes", or_null(s.send_buffer_bytes)},
            {"recv_buffer_bytes", or_null(s.recv_buffer_bytes)},
            {"mtu_bytes", or_null(s.mtu_bytes)},
            {"tcp_nodelay", or_null(s.tcp_nodelay)},
            {"interface", text_or_null(s.interface_name)},
            {"other", other}};
}

json transport_json(const Transport& t) {
    json links = json::array();
    for (const Link& l : t.links)
        links.push_back({{"from", l.from},
                         {"to", l.to},
                         {"kind", l.kind},
                         {"configured", link_settings_json(l.configured)},
                         {"observed", link_settings_json(l.observed)}});
    return {{"links", links}};
}

json deployment_json(const Deployment& d) {
    json nodes = json::array();
    for (const NodeRecord& n : d.nodes)
        nodes.push_back({{"name", n.name},
                         {"address", n.address},
                         {"layers", {{"begin", n.layer_begin}, {"end", n.layer_end}}},
                         {"backend", n.backend}});
    return {{"nodes", nodes},
            {"kv_type", d.kv_type},
            {"slots", d.slots},
            {"configured_context_tokens", d.configured_context_tokens},
            {"model_context_tokens", or_null(d.model_context_tokens)},
            {"largest_verified_input_tokens", or_null(d.largest_verified_input_tokens)}};
}

json free_section(const std::vector<std::string>& elements, const char* name) {
    json out = json::array();
    for (size_t i = 0; i < elements.size(); ++i) {
        std::string error;
        auto v = parse_untrusted_json(elements[i], &error);
        if (!v) fail(Status::invalid_argument, std::string(name) + "[" + std::to_string(i) + "]: " + error);
        if (!v->is_object())
            fail(Status::invalid_argument, std::string(name) + "[" + std::to_string(i) + "] is not a JSON object");
        out.push_back(std::move(*v));
    }
    return out;
}

}  // namespace

std::string utc_now_iso8601() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string report_to_json(const Report& r) {
    json doc = {{"schema", kSchemaVersion},
                {"created_utc", r.created_utc.empty() ? utc_now_iso8601() : r.created_utc},
                {"title", r.title},
                {"artifact", artifact_json(r.artifact)},
                {"runtime", runtime_json(r.runtime)},
                {"transport", transport_json(r.transport)},
                {"deployment", deployment_json(r.deployment)},
                {"memory", free_section(r.memory, "memory")},
                {"benchmarks", free_section(r.benchmarks, "benchmarks")},
                {"evaluations", free_section(r.evaluations, "evaluations")}};
    // Paths are bytes; invalid UTF-8 becomes U+FFFD rather than an exception.
    std::string text = doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    const auto problems = validate_report_json(text);
    if (!problems.empty()) {
        std::string message = "the report does not validate:";
        for (const auto& p : problems) message += "\n  " + p;
        fail(Status::invalid_argument, message);
    }
    return text;
}

}  // namespace strata::report
