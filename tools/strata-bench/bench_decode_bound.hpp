// Decode against the streaming-read bound: the weight bytes one decode step reads (from the
// model's tensor table: every matrix once, one row of token_embd, only the chosen experts of MoE
// stacks), the streaming-read ceiling measured on the device in the same run
// (strata_cuda_kernel_bench_json, ceilings only), and what fraction of the bound tok/s = ceiling /
// bytes per token each measured decode rate reaches. Public headers only.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "strata/strata.hpp"

namespace bench {

struct WeightBytes {
    uint64_t per_token = 0;        // the sum below: what a decode step reads from the weights
    uint64_t matrices = 0;         // every 2-D weight (attention, dense FFN, routers, shared experts)
    uint64_t active_experts = 0;   // n_used / n_expert of each stacked expert tensor
    uint64_t experts_stored = 0;   // all of them, for reference
    uint64_t head = 0;             // output.weight, or token_embd.weight when the output is tied
    uint64_t embd_row = 0;         // the one token_embd row of the token
    uint64_t vectors_not_counted = 0;  // norms and biases (1-D), read too but not counted
    bool tied = false;
};

WeightBytes decode_weight_bytes(strata::model& m);

// The streaming-read ceiling of the current CUDA device in GB/s, measured now; throws
// strata::error (unsupported without a GPU).
double measure_stream_read_gbps(std::string* device_name);

// The benchmark element: bytes per token with their parts, the ceiling, and per prompt length the
// median decode rate (from the prompt_length elements of `benchmarks`) against the bound.
nlohmann::ordered_json decode_bound_element(const WeightBytes& w, double stream_gbps, const std::string& device_name,
                                            const nlohmann::ordered_json& benchmarks);

}  // namespace bench
