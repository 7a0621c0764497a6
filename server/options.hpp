// options.hpp: strata-server's command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace server {

struct Options {
    std::vector<std::string> model_paths;  // --model FILE [MORE-SHARDS...]
    std::string host = "127.0.0.1";
    uint16_t port = 8080;                  // 0: any free port (the bound one is printed)
    int32_t parallel = 1;                  // request slots decoded together
    int64_t n_ctx = 0;                     // per slot; 0: the model's context, at most 4096
    int32_t n_threads = 0;                 // 0: every hardware thread
    std::string api_key;                   // empty: no key asked
    std::vector<std::string> workers;      // pipeline stages after the head, in order
    std::string worker_key_file;           // pre-shared key of the workers
    std::string worker_transport;          // --worker-transport tcp|rdma; empty: tcp
    std::string layers;                    // pipeline layer ranges; empty: planned
    int32_t queue_limit = 64;              // requests waiting for a slot before 503
    double timeout_s = 600;                // per-request deadline; 0: none
    int32_t max_tokens_limit = 0;          // largest max_tokens accepted; 0: the context decides
    std::string chat_format;               // built-in name or template source read from a file
    bool chat_format_is_name = false;
    int32_t prefill_chunk = 32;            // prompt tokens per batched step, all slots together
    uint64_t max_body_bytes = 1u << 20;    // larger request bodies get 413
    int32_t http_threads = 2;
    double drain_s = 30;                   // SIGTERM: how long in-flight requests may finish
    std::string model_alias;               // the id /v1/models reports; empty: the file name
};

// Parses argv; prints usage and exits 2 on a bad command line, 0 on --help.
Options parse_options(int argc, char** argv);

}  // namespace server
