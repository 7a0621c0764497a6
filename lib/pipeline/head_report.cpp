#include "pipeline/head_report.hpp"

#include <nlohmann/json.hpp>

#include "exec/context/context.hpp"
#include "exec/attention/kv_cache.hpp"
#include "model/hparams.hpp"
#include "pipeline/head.hpp"
#include "pipeline/recurrent_layers.hpp"

namespace strata::pipeline::detail {
namespace {

using nlohmann::json;

json memory(uint64_t weights, uint64_t kv, uint64_t kv_per_token, uint64_t state, uint64_t scratch, uint64_t total,
            uint64_t budget) {
    return {{"weight_bytes", weights},
            {"kv_bytes", kv},
            {"kv_bytes_per_token", kv_per_token},
            {"kv_bytes_at_1m", kv_per_token * uint64_t(exec::kLongContextTokens)},
            {"state_bytes", state},  // the recurrent (KDA) layers' fixed state of the sequence, any context
            {"scratch_bytes", scratch},
            {"total_bytes", total},
            {"budget_bytes", budget}};
}

json latency(const LatencyStats& s) {
    return {{"count", s.count},
            {"mean_us", s.count ? s.sum_us / double(s.count) : 0.0},
            {"min_us", s.min_us},
            {"max_us", s.max_us}};
}

// The recurrent (KDA) layers of [first, last) in the head's reading: no KV cache, a fixed state each.
json recurrent_layers(const model::Hparams& hp, int first, int last) {
    return pipeline::recurrent_layers(hp, uint32_t(first), uint32_t(last));
}

json settings_object(const std::vector<std::pair<std::string, std::string>>& settings) {
    json out = json::object();
    for (const auto& [name, value] : settings) out[name] = value;
    return out;
}

// The TCP socket of a tcp or tls link, asked and as the kernel has it; null on other links.
json socket_section(const Link& link, const HeadOptions& options) {
    if (!link.socket) return nullptr;
    const auto& o = *link.socket;
    return {{"configured",
             {{"send_buffer_bytes", options.tcp.send_buffer},
              {"receive_buffer_bytes", options.tcp.receive_buffer},
              {"no_delay", options.tcp.no_delay},
              {"max_payload_bytes", options.tcp.max_payload}}},
            {"observed",
             {{"local", o.local},
              {"remote", o.remote},
              {"send_buffer_bytes", o.send_buffer},
              {"receive_buffer_bytes", o.receive_buffer},
              {"no_delay", o.no_delay},
              {"interface", o.interface},
              {"mtu", o.mtu}}}};
}

// An rdma link: the UCX settings asked for (0 and "": UCX's default), and what UCX chose on
// the connected endpoint (its lanes: transport and device); null on other links.
json rdma_section(const Link& link, const HeadOptions& options) {
    if (!link.ucx) return nullptr;
    const auto& r = options.rdma;
    const auto& o = *link.ucx;
    json lanes = json::array();
    for (const auto& lane : o.lanes)
        lanes.push_back({{"transport", lane.transport}, {"device", lane.device}, {"mtu", lane.mtu}});
    return {{"configured",
             {{"library", "ucx"},
              {"transports", r.transports},
              {"devices", r.devices},
              {"mtu", r.mtu},
              {"max_inline_bytes", r.max_inline},
              {"rx_queue_len", r.rx_queue_len},
              {"tx_queue_len", r.tx_queue_len},
              {"max_payload_bytes", r.max_payload}}},
            {"observed",
             {{"ucx_version", o.version},
              {"local", o.local},
              {"remote", o.remote},
              {"connection_manager", o.connection_manager},
              {"lanes", lanes},
              {"settings", settings_object(o.settings)}}}};
}

}  // namespace

std::string plan_json(const exec::Context& head, const std::vector<LayerRange>& plan, const std::string& planned_by,
                      const std::vector<std::shared_ptr<Link>>& links, const HeadOptions& options) {
    const auto& hp = head.plan();
    json stages = json::array();
    stages.push_back({{"stage", 0},
                      {"role", "head"},
                      {"layers", {plan[0].first, plan[0].second}},
                      {"recurrent_layers", recurrent_layers(head.hparams(), plan[0].first, plan[0].second)},
                      {"backend", "cpu"},
                      {"threads", head.n_threads()},
                      {"memory", memory(hp.weight_bytes, hp.kv_bytes, hp.kv_bytes_per_position, hp.state_bytes,
                                        hp.scratch_bytes, hp.total_bytes, hp.budget_bytes)}});
    // stage_ready carries no per-token or state figure: the head computes a worker's from the model.
    for (const auto& link : links) {
        const auto& r = link->ready;
        const auto& info = link->info;
        stages.push_back(
            {{"stage", link->stage},
             {"role", "worker"},
             {"address", link->endpoint.to_string()},
             {"layers", {link->layers.first, link->layers.second}},
             {"recurrent_layers", recurrent_layers(head.hparams(), link->layers.first, link->layers.second)},
             {"memory",
              memory(r.weight_bytes, r.kv_bytes,
                     exec::kv_bytes_per_position_range(head.hparams(), options.context.kv_type, link->layers.first,
                                                       link->layers.second),
                     exec::state_bytes_range(head.hparams(), link->layers.first, link->layers.second),
                     r.scratch_bytes, r.total_bytes, r.budget_bytes)},
             {"reported",
              {{"available_memory_bytes", info.available_memory},
               {"fixed_layers", {info.fixed_layer_begin, info.fixed_layer_end}},
               {"n_layers", info.n_layers},
               // the worker's own reading (stage_ready), checked equal to recurrent_layers above
               {"recurrent_layers", r.recurrent_layers},
               {"threads", info.n_threads},
               {"backend", info.backend},
               {"host", info.host}}},
             {"transport", link->conn ? link->conn->kind() : transport::to_string(options.transport)},
             {"socket", socket_section(*link, options)},
             {"rdma", rdma_section(*link, options)},
             // As agreed on this link (protocol version, cipher suite); null in clear.
             {"tls", link->tls ? json{{"version", link->tls->version}, {"cipher", link->tls->cipher}} : json(nullptr)}});
    }
    json out = {{"transport", transport::to_string(options.transport)},
                {"protocol_version", transport::kProtocolVersion},
                {"planned_by", planned_by},
                {"n_layers", head.hparams().n_layer},
                {"n_ctx", head.n_ctx()},
                {"kv_type", exec::kv_type_name(options.context.kv_type)},
                {"n_batch", options.n_batch},
                {"wire_dtype", options.wire_dtype == transport::DType::f32    ? "f32"
                               : options.wire_dtype == transport::DType::bf16 ? "bf16"
                                                                              : "f16"},
                {"heartbeat_ms", options.heartbeat.count()},
                {"peer_timeout_ms", options.peer_timeout.count()},
                {"stages", stages}};
    return out.dump(2);
}

std::string stats_json(const std::vector<std::shared_ptr<Link>>& links, double head_compute_seconds,
                       uint64_t forward_calls) {
    json out_links = json::array();
    for (const auto& link : links) {
        LinkStats s;
        {
            std::lock_guard lock(link->stats_mutex);
            s = link->stats;
        }
        out_links.push_back({{"stage", link->stage},
                             {"address", link->endpoint.to_string()},
                             {"failed", link->failed_flag.load()},
                             {"bytes_sent", link->conn ? link->conn->bytes_sent() : 0},
                             {"bytes_received", link->conn ? link->conn->bytes_received() : 0},
                             {"requests", s.requests},
                             {"refused", s.refused},
                             {"latency_all_requests", latency(s.all)},
                             {"latency_single_token", latency(s.single_token)}});
    }
    json out = {{"forward_calls", forward_calls},
                {"head_compute_seconds", head_compute_seconds},
                {"latency_note", "send to reply at the head, worker compute included; prefill parts queue behind "
                                 "earlier ones, so single-token requests give the per-hop decode latency"},
                {"links", out_links}};
    return out.dump(2);
}

}  // namespace strata::pipeline::detail
