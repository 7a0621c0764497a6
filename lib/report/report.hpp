// The report model (schema "strata.report/1", lib/report/schema/report.schema.json): plain
// structs for the sections every report has, and JSON object texts for the sections that the
// benchmark, evaluation and memory code fill (benchmarks, evaluations, memory). report_json.hpp
// turns it into the JSON file; report_markdown.hpp renders that file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/artifact.hpp"
#include "report/runtime_info.hpp"

namespace strata::report {

inline constexpr const char* kSchemaVersion = "strata.report/1";

// One side of a link's settings: as configured, or as observed on the socket. Unknown values
// stay empty (null in JSON); the two sides are separate objects and are never merged.
struct LinkSettings {
    std::string source;  // where the values came from: "command line", "getsockopt(SO_SNDBUF)", ...
    std::optional<uint64_t> send_buffer_bytes;
    std::optional<uint64_t> recv_buffer_bytes;
    std::optional<uint64_t> mtu_bytes;
    std::optional<bool> tcp_nodelay;
    std::string interface_name;                // "" = unknown
    std::map<std::string, std::string> other;  // further settings (RDMA inline size, queue depth)
};

struct Link {
    std::string from;  // node names as in Deployment::nodes
    std::string to;
    std::string kind;  // "tcp", "rdma", "nccl", "in-process"
    LinkSettings configured;
    LinkSettings observed;
};

struct Transport {
    std::vector<Link> links;
};

struct NodeRecord {
    std::string name;
    std::string address;  // "" for the local process
    int64_t layer_begin = 0;  // [begin, end) of the model's layers
    int64_t layer_end = 0;
    std::string backend;  // "cpu", "cuda"
};

struct Deployment {
    std::vector<NodeRecord> nodes;
    std::string kv_type;  // "f16", "q8_0"
    int64_t slots = 1;
    int64_t configured_context_tokens = 0;  // what the context was sized for, not an input run
    std::optional<int64_t> model_context_tokens;  // the model's context_length, when known
    // The longest input actually completed and checked (a context probe); empty until measured.
    std::optional<int64_t> largest_verified_input_tokens;
};

struct Report {
    std::string created_utc;  // ISO 8601; report_to_json fills it when empty
    std::string title;
    Artifact artifact;
    Runtime runtime;
    Transport transport;
    Deployment deployment;
    // Each element is one JSON object's text, checked when the report is serialized.
    std::vector<std::string> memory;       // memory_sampler.hpp: memory_record_json
    std::vector<std::string> benchmarks;   // strata-bench runs
    std::vector<std::string> evaluations;  // eval_score.hpp: eval_record_json
};

}  // namespace strata::report
