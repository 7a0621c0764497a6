// strata_worker_*: serving a layer range of a model to pipeline heads (what strata-worker runs).
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capi/device.hpp"
#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/key.hpp"
#include "capi/link.hpp"

#if STRATA_HAS_PIPELINE
#include "pipeline/worker.hpp"
#endif
#ifdef STRATA_HAVE_CUDA
#include "runtime/gpu_stage.hpp"
#endif

using strata::Status;
using strata::fail;
using strata::capi::require;

struct strata_worker {
#if STRATA_HAS_PIPELINE
    std::unique_ptr<strata::pipeline::Worker> worker;
#endif
};

namespace {

#if STRATA_HAS_PIPELINE

// A worker takes its key from one place only: both given is a mistake, not a precedence.
std::vector<uint8_t> key_of(const strata_worker_params& p) {
    if (p.key_file && p.key) fail(Status::invalid_argument, "give key_file or key, not both");
    return strata::capi::read_key(p.key_file, p.key, p.key_length);
}

// Where the worker's stages run. A GPU worker checks its device now, so that a machine without
// one fails at start naming why, not at the first head's configure; each stage reports its weight
// upload through the model's progress callback ("upload weights"), as a CUDA session does.
void set_device(strata::pipeline::StageOptions& stage, int32_t device, const strata_model* model) {
    strata::capi::check_device(device);
    if (device == STRATA_DEVICE_CPU) return;
#ifdef STRATA_HAVE_CUDA
    strata::cuda::require_usable_gpu();
    stage.make_context = [progress = strata::capi::upload_progress(*model)](const strata::gguf::ModelFile& file,
                                                                            const strata::exec::ContextParams& params) {
        return strata::cuda::make_gpu_stage_context(file, params, progress);
    };
    stage.backend = "cuda";
    stage.free_memory = strata::cuda::gpu_free_memory;
#else
    (void)stage;
    (void)model;
    strata::capi::no_cuda_backend();
#endif
}

strata::pipeline::WorkerOptions options_of(strata_model* model, const strata_worker_params& p) {
    strata::pipeline::WorkerOptions o;
    auto endpoint = strata::transport::parse_endpoint(p.listen ? p.listen : "127.0.0.1:0");
    if (!endpoint) fail(Status::invalid_argument, "listen address: " + endpoint.error().detail);
    o.listen = endpoint.value();
    o.key = key_of(p);
    o.allow_no_key = p.allow_no_key != 0;
    if (p.layer_begin < 0 || p.layer_end < 0)
        fail(Status::invalid_argument, "layer_begin and layer_end must not be negative (both 0: any range)");
    o.fixed_layer_begin = uint32_t(p.layer_begin);
    o.fixed_layer_end = uint32_t(p.layer_end);
    if (p.n_threads < 0) fail(Status::invalid_argument, "n_threads must be >= 0 (0: every hardware thread)");
    o.stage.n_threads = p.n_threads;
    o.stage.memory_budget = p.memory_budget;
    set_device(o.stage, p.device, model);
    if (p.heartbeat_ms <= 0) fail(Status::invalid_argument, "heartbeat_ms must be positive");
    if (p.peer_timeout_ms <= 0) fail(Status::invalid_argument, "peer_timeout_ms must be positive");
    o.heartbeat = strata::transport::Timeout(p.heartbeat_ms);
    o.peer_timeout = strata::transport::Timeout(p.peer_timeout_ms);
    o.tls.cert_file = p.tls_cert_file ? p.tls_cert_file : "";
    o.tls.key_file = p.tls_key_file ? p.tls_key_file : "";
    o.tls.ca_file = p.tls_ca_file ? p.tls_ca_file : "";
    if (o.tls.ca_file.size() && o.tls.cert_file.empty())
        fail(Status::invalid_argument, "tls_ca_file needs tls_cert_file and tls_key_file: the worker presents a "
                                       "certificate before it asks the head for one");
    strata::capi::read_link_fields(strata::capi::link_fields(p), o.transport, o.rdma);
    if (p.log) {
        auto log = p.log;
        void* user_data = p.log_user_data;
        o.log = [log, user_data](const std::string& line) { log(line.c_str(), user_data); };
    }
    o.model_identity = strata::capi::identity_of(model);  // the model's shard digests, cached once
    return o;
}

strata::pipeline::Worker& worker_of(const strata_worker* w) {
    require(w, "worker");
    if (!w->worker) fail(Status::invalid_argument, "the worker was not created");
    return *w->worker;
}

#else

[[noreturn]] void unsupported() {
    fail(Status::unsupported, "this build of strata has no pipeline support (the TCP transport needs Boost.Asio "
                              "with C++20 coroutines)");
}

#endif

}  // namespace

extern "C" {

void strata_worker_default_params(strata_worker_params* params) {
    if (!params) return;
    *params = strata_worker_params{};
    params->struct_size = sizeof *params;
    params->listen = "127.0.0.1:0";
    params->heartbeat_ms = 1000;
    params->peer_timeout_ms = 5000;
}

strata_status strata_worker_create(strata_model* model, const strata_worker_params* params,
                                   strata_worker** out_worker) {
    STRATA_API_BEGIN
    require(out_worker, "out_worker");
    *out_worker = nullptr;
#if STRATA_HAS_PIPELINE
    require(model, "model");
    const strata_worker_params p = strata::capi::params_or_default(params, strata_worker_default_params,
                                                                           offsetof(strata_worker_params, tls_cert_file));
    auto w = std::make_unique<strata_worker>();
    w->worker = std::make_unique<strata::pipeline::Worker>(model->file, options_of(model, p));
    w->worker->bind();
    *out_worker = w.release();
#else
    (void)model;
    (void)params;
    unsupported();
#endif
    STRATA_API_END
}

strata_status strata_worker_port(const strata_worker* worker, uint16_t* out_port) {
    STRATA_API_BEGIN
    require(out_port, "out_port");
#if STRATA_HAS_PIPELINE
    *out_port = worker_of(worker).port();
#else
    (void)worker;
    unsupported();
#endif
    STRATA_API_END
}

strata_status strata_worker_run(strata_worker* worker) {
    STRATA_API_BEGIN
#if STRATA_HAS_PIPELINE
    worker_of(worker).run();
#else
    (void)worker;
    unsupported();
#endif
    STRATA_API_END
}

strata_status strata_worker_stop(strata_worker* worker) {
    STRATA_API_BEGIN
#if STRATA_HAS_PIPELINE
    worker_of(worker).stop();
#else
    (void)worker;
    unsupported();
#endif
    STRATA_API_END
}

void strata_worker_free(strata_worker* worker) { delete worker; }

}  // extern "C"
