// The head of a pipeline: runs inside the host application, holds the embeddings and the
// first layer range, and drives one sequence through remote workers (each a later range; the
// last one samples) over one TCP connection per worker.
//
// Star topology: every hop goes through the head, which relays a worker's hidden states to the
// next worker on its io thread without touching them (no copy, no compute), so the head's own
// compute, the relays and the workers' compute overlap. A prompt is cut into micro-batches of
// n_batch tokens that flow through the stages one after another: while worker 2 runs
// micro-batch k, worker 1 runs k+1 and the head k+2.
//
// Failure: every link carries heartbeats both ways; a worker that closes, breaks the protocol
// or stays silent for peer_timeout fails its link, and the call in progress (and every later
// one) throws Error(stage_failed) naming the stage, until reconnect(). A request a worker
// refuses (error frame with a library status) fails only that call.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec/context/context.hpp"
#include "exec/sequence/sequence.hpp"
#include "pipeline/planner.hpp"
#include "transport/messages.hpp"
#include "transport/tcp.hpp"
#include "transport/link_kind.hpp"
#include "transport/tls.hpp"
#include "transport/ucx/ucx_options.hpp"

namespace strata::gguf {
class ModelFile;
}

namespace strata::pipeline {

struct HeadOptions {
    std::vector<transport::Endpoint> workers;  // in stage order
    std::vector<LayerRange> layers;            // head first; empty: planned from memory
    std::vector<uint8_t> key;
    exec::ContextParams context;               // n_ctx, n_threads, kv_type, memory_budget of the head
    int n_batch = 32;                          // prefill micro-batch (tokens)
    transport::DType wire_dtype = transport::DType::f16;  // hidden states between stages
    transport::Timeout heartbeat{1000};
    transport::Timeout peer_timeout{5000};
    transport::Timeout connect_timeout{5000};
    transport::TcpOptions tcp;
    // TLS on every link when enabled(): workers' certificates are checked against ca_file (and
    // the address dialed); cert_file and key_file are the head's, for workers that require one.
    // A refused certificate or TLS handshake is Error(refused) naming the stage.
    transport::TlsOptions tls;
    // What every link runs on: tcp (tls when the TLS files are set), tls, or rdma (UCX, with
    // `rdma`'s settings). A transport this build lacks is Error(unsupported) naming it.
    transport::LinkKind transport = transport::LinkKind::tcp;
    transport::UcxOptions rdma;
    // The device scratch of a GPU stage (cuda::gpu_stage_scratch_bytes) for these params (layer
    // range, n_ctx, n_batch, kv_type): planning from memory takes it off the free memory of each
    // worker whose backend is "cuda". Empty (a library without CUDA): planned as CPU workers are.
    std::function<uint64_t(const gguf::ModelFile&, const exec::ContextParams&)> gpu_stage_scratch_bytes;
};

class Head final : public exec::Sequence {
public:
    // Connects, plans, configures every stage; throws Error (io, refused, stage_failed,
    // out_of_memory, invalid_argument) naming the stage.
    Head(std::shared_ptr<const gguf::ModelFile> file, const transport::Digest& model_id, HeadOptions options,
         const sample::SamplerParams& sampling);
    ~Head() override;

    // The plan as executed (JSON) and the link counters (JSON).
    std::string plan_json() const;
    std::string stats_json() const;
    // Re-dials every stage with the executed plan; the sequence restarts empty.
    void reconnect();
    bool failed() const;

    // exec::Sequence
    int64_t n_ctx() const override;
    int64_t n_past() const override;
    int64_t n_vocab() const override;
    std::string plan() const override;
    const sample::SamplerParams& sampling() const override;
    void set_sampling(const sample::SamplerParams& params) override;
    void reset() override;
    void decode(std::span<const int32_t> tokens, bool all_logits, std::vector<float>* logits) override;
    int32_t sample(uint32_t n_top, std::vector<sample::TokenLogprob>* top) override;
    int32_t decode_and_sample(std::span<const int32_t> tokens, uint32_t n_top,
                              std::vector<sample::TokenLogprob>* top) override;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace strata::pipeline
