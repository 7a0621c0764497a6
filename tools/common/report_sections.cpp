#include "report_sections.hpp"

#include <fstream>
#include <sstream>

namespace report_sections {

namespace {

// A plan value as a byte count: a positive integer, else unknown (0 means "OS default" there).
json bytes_or_null(const json& v) { return v.is_number_unsigned() && v.get<uint64_t>() > 0 ? v : json(nullptr); }
json bool_or_null(const json& v) { return v.is_boolean() ? v : json(nullptr); }
json text_or_null(const json& v) { return v.is_string() && !v.get<std::string>().empty() ? v : json(nullptr); }
const json& at(const json& obj, const char* key) {
    static const json null_value;
    if (!obj.is_object()) return null_value;
    auto it = obj.find(key);
    return it == obj.end() ? null_value : *it;
}
std::string as_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump(); }

json link_settings(const std::string& source) {
    return {{"source", source},       {"send_buffer_bytes", nullptr}, {"recv_buffer_bytes", nullptr},
            {"mtu_bytes", nullptr},   {"tcp_nodelay", nullptr},       {"interface", nullptr},
            {"other", json::object()}};
}

json layers(const json& range) {
    const bool ok = range.is_array() && range.size() == 2 && range[0].is_number_unsigned() && range[1].is_number_unsigned();
    return {{"begin", ok ? range[0] : json(0)}, {"end", ok ? range[1] : json(0)}};
}

}  // namespace

int64_t arch_int(strata::model& m, const std::string& key) {
    try {
        const std::string arch(m.get_string("general.architecture"));
        const std::string full = arch + "." + key;
        return m.has_key(full) ? m.get_int(full) : -1;
    } catch (const strata::error&) {
        return -1;
    }
}

Deployment open_session(strata::model& m, const strata::pipeline_params& pipeline, int64_t n_ctx, int32_t n_threads,
                        std::optional<strata::pipeline>& pipe, std::optional<strata::session>& session,
                        int32_t device) {
    if (!pipeline.workers.empty()) {
        strata::pipeline_params p = pipeline;
        p.n_ctx = n_ctx;
        p.n_threads = n_threads;
        pipe.emplace(m, p);
        session.emplace(pipe->session());
        return pipeline_deployment(m, pipe->plan_json());
    }
    strata::session_params sp;
    sp.n_ctx = n_ctx;
    sp.n_threads = n_threads;
    sp.device = static_cast<strata_device>(device);
    session.emplace(m, sp);
    return local_deployment(m, session->n_ctx(), "f16", 1, device == STRATA_DEVICE_CUDA ? "cuda" : "cpu");
}

Deployment local_deployment(strata::model& m, int64_t n_ctx, const std::string& kv_type, int64_t slots,
                            const std::string& backend) {
    const int64_t n_layer = arch_int(m, "block_count");
    const int64_t model_ctx = arch_int(m, "context_length");
    Deployment d;
    d.deployment = {{"nodes", json::array({{{"name", "head"},
                                            {"address", ""},
                                            {"layers", {{"begin", 0}, {"end", n_layer < 0 ? 0 : n_layer}}},
                                            {"backend", backend}}})},
                    {"kv_type", kv_type},
                    {"slots", slots},
                    {"configured_context_tokens", n_ctx},
                    {"model_context_tokens", model_ctx < 0 ? json(nullptr) : json(model_ctx)},
                    {"largest_verified_input_tokens", nullptr}};
    d.transport = {{"links", json::array()}};
    return d;
}

Deployment pipeline_deployment(strata::model& m, const std::string& plan_text, int64_t slots) {
    json plan;
    try {
        plan = json::parse(plan_text);
    } catch (const json::exception& e) {
        throw strata::error(STRATA_ERR_FORMAT, std::string("the pipeline plan is not JSON: ") + e.what());
    }
    const int64_t model_ctx = arch_int(m, "context_length");
    json nodes = json::array(), links = json::array();
    const std::string kind = at(plan, "transport").is_string() ? at(plan, "transport").get<std::string>() : "unknown";
    const json& stages = at(plan, "stages");
    if (stages.is_array())
        for (const json& s : stages) {
            const bool head = as_text(at(s, "role")) == "head";
            const std::string name = head ? "head" : "stage " + as_text(at(s, "stage"));
            const json& reported = at(s, "reported");
            std::string backend = as_text(head ? at(s, "backend") : at(reported, "backend"));
            nodes.push_back({{"name", name},
                             {"address", as_text(at(s, "address"))},
                             {"layers", layers(at(s, "layers"))},
                             {"backend", backend.empty() ? "unknown" : backend}});
            if (head) continue;
            const std::string link_kind = at(s, "transport").is_string() ? at(s, "transport").get<std::string>() : kind;
            if (at(s, "rdma").is_object()) {
                // rdma: the UCX settings asked for, and what UCX chose on the endpoint (its lanes).
                const json& conf = at(at(s, "rdma"), "configured");
                const json& obs = at(at(s, "rdma"), "observed");
                json c = link_settings("strata_pipeline_params rdma_* (0 and \"\": UCX's default)");
                c["mtu_bytes"] = at(conf, "mtu").is_number() && at(conf, "mtu").get<int64_t>() > 0 ? at(conf, "mtu") : json(nullptr);
                for (const char* k : {"library", "transports", "devices", "max_inline_bytes", "rx_queue_len", "tx_queue_len",
                                      "max_payload_bytes"})
                    if (!at(conf, k).is_null()) c["other"][k] = as_text(at(conf, k));
                json o = link_settings("the connected UCX endpoint (ucp_ep_print_info lanes), as strata_pipeline_plan_json reports it");
                std::string lanes;
                const json& ls = at(obs, "lanes");
                if (ls.is_array())
                    for (const json& lane : ls) {
                        lanes += (lanes.empty() ? "" : ",") + as_text(at(lane, "transport")) + "/" + as_text(at(lane, "device"));
                        if (o["mtu_bytes"].is_null() && at(lane, "mtu").is_number() && at(lane, "mtu").get<int64_t>() > 0)
                            o["mtu_bytes"] = at(lane, "mtu");
                        if (o["interface"].is_null()) o["interface"] = as_text(at(lane, "device"));
                    }
                o["other"]["lanes"] = lanes;
                for (const char* k : {"ucx_version", "connection_manager", "local", "remote"})
                    if (!at(obs, k).is_null()) o["other"][k] = as_text(at(obs, k));
                links.push_back({{"from", "head"}, {"to", name}, {"kind", link_kind}, {"configured", c}, {"observed", o}});
                continue;
            }
            // Configured: what this process asked for; observed: what getsockopt and the
            // interface said on the connected socket. Never copied from one side to the other.
            const json& conf = at(at(s, "socket"), "configured");
            const json& obs = at(at(s, "socket"), "observed");
            json c = link_settings("strata_pipeline_params (socket_buffer_bytes 0: the OS default)");
            c["send_buffer_bytes"] = bytes_or_null(at(conf, "send_buffer_bytes"));
            c["recv_buffer_bytes"] = bytes_or_null(at(conf, "receive_buffer_bytes"));
            c["tcp_nodelay"] = bool_or_null(at(conf, "no_delay"));
            for (const char* k : {"max_payload_bytes"})
                if (!at(conf, k).is_null()) c["other"][k] = as_text(at(conf, k));
            json o = link_settings("the connected socket (getsockopt, interface MTU), as strata_pipeline_plan_json reports it");
            o["send_buffer_bytes"] = bytes_or_null(at(obs, "send_buffer_bytes"));
            o["recv_buffer_bytes"] = bytes_or_null(at(obs, "receive_buffer_bytes"));
            o["mtu_bytes"] = bytes_or_null(at(obs, "mtu"));
            o["tcp_nodelay"] = bool_or_null(at(obs, "no_delay"));
            o["interface"] = text_or_null(at(obs, "interface"));
            for (const char* k : {"local", "remote"})
                if (!at(obs, k).is_null()) o["other"][k] = as_text(at(obs, k));
            links.push_back({{"from", "head"}, {"to", name}, {"kind", link_kind}, {"configured", c}, {"observed", o}});
        }
    for (const char* k : {"n_batch", "wire_dtype", "heartbeat_ms", "peer_timeout_ms", "protocol_version", "planned_by"})
        for (json& l : links)
            if (!at(plan, k).is_null()) l["configured"]["other"][k] = as_text(at(plan, k));
    Deployment d;
    const json& n_ctx = at(plan, "n_ctx");
    d.deployment = {{"nodes", nodes},
                    {"kv_type", as_text(at(plan, "kv_type"))},
                    {"slots", slots},
                    {"configured_context_tokens", n_ctx.is_number_unsigned() ? n_ctx : json(0)},
                    {"model_context_tokens", model_ctx < 0 ? json(nullptr) : json(model_ctx)},
                    {"largest_verified_input_tokens", nullptr}};
    d.transport = {{"links", links}};
    return d;
}

json base_sections(strata::model& m, const std::string& title, const Deployment& d) {
    return {{"title", title},
            {"artifact", json::parse(strata::reports::artifact_json(m))},
            {"runtime", json::parse(strata::reports::runtime_json())},
            {"transport", d.transport},
            {"deployment", d.deployment},
            {"memory", json::array()},
            {"benchmarks", json::array()},
            {"evaluations", json::array()}};
}

std::string markdown_path(const std::string& json_path) {
    const std::string ext = ".json";
    if (json_path.size() > ext.size() && json_path.compare(json_path.size() - ext.size(), ext.size(), ext) == 0)
        return json_path.substr(0, json_path.size() - ext.size()) + ".md";
    return json_path + ".md";
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw strata::error(STRATA_ERR_IO, "cannot read " + path);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw strata::error(STRATA_ERR_IO, "cannot write " + path);
}

std::string write_report(const json& sections, const std::string& path) {
    const std::string text = strata::reports::assemble(sections.dump(-1, ' ', false, json::error_handler_t::replace));
    const std::string md = strata::reports::markdown(text);
    write_file(path, text);
    const std::string md_path = markdown_path(path);
    write_file(md_path, md);
    return md_path;
}

}  // namespace report_sections
