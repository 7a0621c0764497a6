// strata_pipeline_*: a head in this process driving remote workers (pipeline/head.hpp); its
// sequence is offered as an ordinary strata_session.
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "capi/guard.hpp"
#include "capi/key.hpp"
#include "capi/link.hpp"
#include "capi/session.hpp"

#if STRATA_HAS_PIPELINE
#include "pipeline/head.hpp"
#include "pipeline/identity.hpp"
#endif
#if STRATA_HAS_PIPELINE && defined(STRATA_HAVE_CUDA)
#include "runtime/gpu_stage.hpp"
#endif

using strata::Status;
using strata::fail;
using strata::capi::require;

#if STRATA_HAS_PIPELINE

struct strata_pipeline {
    std::shared_ptr<const strata::gguf::ModelFile> file;
    strata::capi::SessionTokenizer tokenizer;
    std::shared_ptr<strata::pipeline::Head> head;
    std::shared_ptr<std::atomic<bool>> session_open = std::make_shared<std::atomic<bool>>(false);
};

namespace {

using strata::pipeline::Head;

// The pipeline's sequence as a session's: forwards to the head, and frees the pipeline's one
// session slot when the session goes.
class PipelineSequence final : public strata::exec::Sequence {
public:
    PipelineSequence(std::shared_ptr<Head> head, std::shared_ptr<std::atomic<bool>> open)
        : head_(std::move(head)), open_(std::move(open)) {}
    ~PipelineSequence() override { *open_ = false; }

    int64_t n_ctx() const override { return head_->n_ctx(); }
    int64_t n_past() const override { return head_->n_past(); }
    int64_t n_vocab() const override { return head_->n_vocab(); }
    std::string plan() const override { return head_->plan(); }
    const strata::sample::SamplerParams& sampling() const override { return head_->sampling(); }
    void set_sampling(const strata::sample::SamplerParams& p) override { head_->set_sampling(p); }
    void reset() override { head_->reset(); }
    void decode(std::span<const int32_t> tokens, bool all_logits, std::vector<float>* logits) override {
        head_->decode(tokens, all_logits, logits);
    }
    int32_t sample(uint32_t n_top, std::vector<strata::sample::TokenLogprob>* top) override {
        return head_->sample(n_top, top);
    }
    int32_t decode_and_sample(std::span<const int32_t> tokens, uint32_t n_top,
                              std::vector<strata::sample::TokenLogprob>* top) override {
        return head_->decode_and_sample(tokens, n_top, top);
    }

private:
    std::shared_ptr<Head> head_;
    std::shared_ptr<std::atomic<bool>> open_;
};

strata::transport::Timeout positive_ms(int32_t ms, const char* name) {
    if (ms <= 0) fail(Status::invalid_argument, std::string(name) + " is " + std::to_string(ms) + ", expected > 0");
    return strata::transport::Timeout(ms);
}

strata::pipeline::HeadOptions head_options(const strata_pipeline_params& p) {
    strata::pipeline::HeadOptions o;
#ifdef STRATA_HAVE_CUDA
    o.gpu_stage_scratch_bytes = strata::cuda::gpu_stage_scratch_bytes;  // plans GPU workers' layers
#endif
    if (p.n_workers == 0) fail(Status::invalid_argument, "a pipeline needs at least one worker (n_workers is 0)");
    require(p.workers, "workers");
    for (size_t i = 0; i < p.n_workers; ++i) {
        const char* text = require(p.workers[i], "workers[i]");
        auto endpoint = strata::transport::parse_endpoint(text);
        if (!endpoint)
            fail(Status::invalid_argument, "worker " + std::to_string(i + 1) + " (stage " + std::to_string(i + 1) +
                                               ") \"" + text + "\": " + endpoint.error().detail);
        o.workers.push_back(endpoint.value());
    }
    if (p.layers) o.layers = strata::pipeline::parse_layer_plan(p.layers);
    o.key = strata::capi::read_key(p.key_file, p.key, p.key_length);
    if (p.n_ctx < 0) fail(Status::invalid_argument, "n_ctx is " + std::to_string(p.n_ctx) + ", expected 0 or more");
    if (p.n_threads < 0) fail(Status::invalid_argument, "n_threads is " + std::to_string(p.n_threads) + ", expected 0 or more");
    if (p.kv_type != STRATA_KV_F16 && p.kv_type != STRATA_KV_Q8_0)
        fail(Status::invalid_argument, "kv_type is " + std::to_string(p.kv_type) + ", expected STRATA_KV_F16 or STRATA_KV_Q8_0");
    if (p.n_batch <= 0) fail(Status::invalid_argument, "n_batch is " + std::to_string(p.n_batch) + ", expected at least 1");
    if (p.socket_buffer_bytes < 0)
        fail(Status::invalid_argument, "socket_buffer_bytes is " + std::to_string(p.socket_buffer_bytes) + ", expected 0 or more");
    o.context.n_ctx = p.n_ctx;
    o.context.n_threads = p.n_threads;
    o.context.kv_type = p.kv_type == STRATA_KV_Q8_0 ? strata::exec::KvType::q8_0 : strata::exec::KvType::f16;
    o.context.memory_budget = p.memory_budget;
    o.n_batch = p.n_batch;
    o.heartbeat = positive_ms(p.heartbeat_ms, "heartbeat_ms");
    o.peer_timeout = positive_ms(p.peer_timeout_ms, "peer_timeout_ms");
    o.connect_timeout = positive_ms(p.connect_timeout_ms, "connect_timeout_ms");
    if (o.peer_timeout <= o.heartbeat)
        fail(Status::invalid_argument, "peer_timeout_ms (" + std::to_string(p.peer_timeout_ms) +
                                           ") must exceed heartbeat_ms (" + std::to_string(p.heartbeat_ms) +
                                           "), or a live stage would be declared dead");
    switch (p.wire_dtype) {
        case STRATA_WIRE_F32: o.wire_dtype = strata::transport::DType::f32; break;
        case STRATA_WIRE_F16: o.wire_dtype = strata::transport::DType::f16; break;
        case STRATA_WIRE_BF16: o.wire_dtype = strata::transport::DType::bf16; break;
        default:
            fail(Status::invalid_argument, "wire_dtype is " + std::to_string(p.wire_dtype) +
                                               ", expected STRATA_WIRE_F32, STRATA_WIRE_F16 or STRATA_WIRE_BF16");
    }
    o.tcp.send_buffer = p.socket_buffer_bytes;
    o.tcp.receive_buffer = p.socket_buffer_bytes;
    o.tls.cert_file = p.tls_cert_file ? p.tls_cert_file : "";
    o.tls.key_file = p.tls_key_file ? p.tls_key_file : "";
    o.tls.ca_file = p.tls_ca_file ? p.tls_ca_file : "";
    if (o.tls.cert_file.empty() != o.tls.key_file.empty())
        fail(Status::invalid_argument, "tls_cert_file and tls_key_file go together");
    if (!o.tls.cert_file.empty() && o.tls.ca_file.empty())
        fail(Status::invalid_argument, "tls_cert_file without tls_ca_file: the head would not check the workers' "
                                       "certificates; give the CA that signed them");
    strata::capi::read_link_fields(strata::capi::link_fields(p), o.transport, o.rdma);
    return o;
}

strata_pipeline& pipeline_of(strata_pipeline* p) { return *require(p, "pipeline"); }
const strata_pipeline& pipeline_of(const strata_pipeline* p) { return *require(p, "pipeline"); }

}  // namespace

#define STRATA_PIPELINE_ONLY(body) body

#else  // !STRATA_HAS_PIPELINE

struct strata_pipeline {};

#define STRATA_PIPELINE_ONLY(body) \
    fail(Status::unsupported, "this build of strata has no pipeline transport (Boost.Asio with C++20 coroutines)");

#endif

extern "C" {

void strata_pipeline_default_params(strata_pipeline_params* params) {
    if (!params) return;
    *params = strata_pipeline_params{};
    params->struct_size = sizeof *params;
    params->kv_type = STRATA_KV_F16;
    params->n_batch = 32;
    params->heartbeat_ms = 1000;
    params->peer_timeout_ms = 5000;
    params->connect_timeout_ms = 5000;
    params->wire_dtype = STRATA_WIRE_F16;
}

strata_status strata_pipeline_create(strata_model* model, [[maybe_unused]] const strata_pipeline_params* params,
                                     strata_pipeline** out_pipeline) {
    STRATA_API_BEGIN
    require(out_pipeline, "out_pipeline");
    *out_pipeline = nullptr;
    require(model, "model");
    STRATA_PIPELINE_ONLY({
        const strata_pipeline_params p = strata::capi::params_or_default(
            params, strata_pipeline_default_params, offsetof(strata_pipeline_params, tls_cert_file));
        strata::pipeline::HeadOptions options = head_options(p);
        auto pipeline = std::make_unique<strata_pipeline>();
        pipeline->file = model->file;
        pipeline->tokenizer = strata::capi::session_tokenizer(model);
        const auto id = strata::pipeline::parse_identity(strata::capi::identity_of(model));
        pipeline->head = std::make_shared<strata::pipeline::Head>(pipeline->file, id, std::move(options),
                                                                  strata::capi::default_sampling());
        *out_pipeline = pipeline.release();
    })
    STRATA_API_END
}

void strata_pipeline_free(strata_pipeline* pipeline) { delete pipeline; }

strata_status strata_pipeline_plan_json(const strata_pipeline* pipeline, [[maybe_unused]] char* text,
                                        [[maybe_unused]] size_t capacity, [[maybe_unused]] size_t* out_needed) {
    STRATA_API_BEGIN
    require(pipeline, "pipeline");
    STRATA_PIPELINE_ONLY({
        strata::capi::copy_text_out(pipeline_of(pipeline).head->plan_json(), text, capacity, out_needed, "the plan");
    })
    STRATA_API_END
}

strata_status strata_pipeline_stats_json(const strata_pipeline* pipeline, [[maybe_unused]] char* text,
                                         [[maybe_unused]] size_t capacity, [[maybe_unused]] size_t* out_needed) {
    STRATA_API_BEGIN
    require(pipeline, "pipeline");
    STRATA_PIPELINE_ONLY({
        strata::capi::copy_text_out(pipeline_of(pipeline).head->stats_json(), text, capacity, out_needed,
                                    "the statistics");
    })
    STRATA_API_END
}

strata_status strata_pipeline_session(strata_pipeline* pipeline, strata_session** out_session) {
    STRATA_API_BEGIN
    require(out_session, "out_session");
    *out_session = nullptr;
    require(pipeline, "pipeline");
    STRATA_PIPELINE_ONLY({
        auto& p = pipeline_of(pipeline);
        if (p.session_open->exchange(true))
            fail(Status::invalid_argument, "this pipeline already has a session (one sequence per pipeline): free it "
                                           "first, or create another pipeline to the same workers");
        std::unique_ptr<strata::exec::Sequence> sequence;
        try {
            sequence = std::make_unique<PipelineSequence>(p.head, p.session_open);
        } catch (...) {
            *p.session_open = false;
            throw;
        }
        *out_session = strata::capi::make_session(p.tokenizer, std::move(sequence), p.file);
    })
    STRATA_API_END
}

strata_status strata_pipeline_reconnect(strata_pipeline* pipeline) {
    STRATA_API_BEGIN
    require(pipeline, "pipeline");
    STRATA_PIPELINE_ONLY({ pipeline_of(pipeline).head->reconnect(); })
    STRATA_API_END
}

}  // extern "C"
