// The forward pass on the GPU (see gpu_context.hpp): setup, the per-layer sequence (the order of
// exec::Context::run_layers, attention residuals included), the grouped-query attention and
// dense FFN blocks, micro-batches and the captured one-token graph. The latent attention, KDA and
// MoE blocks are in gpu_context_mla.cpp, gpu_context_kda.cpp and gpu_context_moe.cpp.
#include "gpu_context.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/attention/attention.cuh"
#include "cuda_error.hpp"
#include "exec/device_activations.hpp"
#include "gpu_context_device.hpp"
#include "gpu_plan.hpp"
#include "kernels/kda/kda_chunk.cuh"
#include "kernels/ops/model_ops.cuh"
#include "exec/memory/device_plan.hpp"
#include "exec/rope.hpp"
#include "exec/sequence/sequence.hpp"
#include "kernels/products/gemv.cuh"
#include "gguf/model_file.hpp"
#include "matmul.hpp"
#include "kernels/moe/moe.cuh"
#include "kernels/ops/ops.cuh"
#include "quant/type_ids.hpp"
#include "util/error.hpp"

namespace strata::cuda {

namespace {

uint64_t free_device_memory() {
    size_t free_bytes = 0, total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "asking the device for its free memory");
    return free_bytes;
}

}  // namespace

DevicePtr device_alloc(uint64_t bytes, const char* what) {
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, std::max<uint64_t>(bytes, 256)); e != cudaSuccess) {
        (void)cudaGetLastError();
        check(e, (std::string("allocating ") + std::to_string(bytes) + " bytes of device memory for " + what).c_str());
    }
    return DevicePtr(p);
}

PinnedPtr pinned_alloc(uint64_t bytes, const char* what) {
    void* p = nullptr;
    if (cudaError_t e = cudaMallocHost(&p, std::max<uint64_t>(bytes, 64)); e != cudaSuccess) {
        (void)cudaGetLastError();
        check(e, (std::string("allocating ") + std::to_string(bytes) + " bytes of pinned host memory for " + what).c_str());
    }
    return PinnedPtr(p);
}

GpuContext::Device::~Device() {
    if (stream) cudaStreamSynchronize(stream);
    for (cudaGraphExec_t& g : graph)
        if (g) cudaGraphExecDestroy(g);
    mm.reset();
    w.reset();
    if (stream) cudaStreamDestroy(stream);
}

namespace {

// Carves the activations of n_batch tokens: the widths the plan counts (device_activation_bytes),
// then the int32 rows, logits, token ids and n_past.
void carve_activations(GpuContext::Device& d, Carver& c, const model::Hparams& hp, int64_t nb, bool last_stage) {
    exec::zip_device_activations(d.widths, d.a, [&](int64_t width, float*& p) {
        p = width > 0 ? c.take<float>(uint64_t(width) * uint64_t(nb)) : nullptr;
    });
    d.ints = d.widths.chosen_ints > 0 ? c.take<int32_t>(uint64_t(d.widths.chosen_ints) * uint64_t(nb)) : nullptr;
    d.logits = last_stage ? c.take<float>(uint64_t(exec::device_logit_rows(nb)) * uint64_t(hp.n_vocab)) : nullptr;
    d.ids = c.take<int32_t>(uint64_t(nb));
    d.n_past = c.take<int32_t>(1);
}

}  // namespace

std::string gpu_unavailable_reason() {
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return std::string("no usable CUDA device: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    }
    if (devices == 0) return "no usable CUDA device: the CUDA runtime counts 0 devices";
    return "";
}

GpuContext::GpuContext(const gguf::ModelFile& file, const exec::ContextParams& params, const GpuOptions& options)
    : hp_(model::read_hparams(file)), d_(std::make_unique<Device>()) {
    check_device_params(hp_, params);
    if (std::string why = gpu_unavailable_reason(); !why.empty()) fail(Status::unsupported, why);
    const int last = params.last_layer < 0 ? int(hp_.n_layer) : params.last_layer;
    const model::ModelWeights w = model::bind_weights(file, hp_, params.first_layer, last);
    first_layer_ = w.first_layer;
    last_layer_ = w.last_layer;
    last_stage_ = w.last_stage;
    // Plan before allocating anything (the same function strata_model_plan_json reports).
    const DeviceStagePlan sp = device_stage_plan(hp_, w, params);
    n_ctx_ = sp.n_ctx;
    n_batch_ = sp.n_batch;
    kda_chunk_ = params.kda_chunk;
    graphs_ = options.cuda_graphs;

    Device& d = *d_;
    // Each layer's slot in the cache of its kind; the counts are the caches' layers.
    int n_gqa = 0, n_mla = 0, n_kda = 0;
    for (int il = first_layer_; il < last_layer_; ++il) {
        const bool rec = hp_.is_recurrent_layer(il);
        d.kda_slot.push_back(rec ? n_kda++ : -1);
        d.mla_slot.push_back(!rec && hp_.is_mla() ? n_mla++ : -1);
        d.gqa_slot.push_back(!rec && !hp_.is_mla() ? n_gqa++ : -1);
    }
    recurrent_ = n_kda > 0;
    const bool any_moe = sp.any_moe;
    const std::string& host_routing = sp.host_routing;
    const uint64_t ws_bytes = sp.attention_workspace_bytes;
    const uint64_t route_ws_bytes = sp.route_workspace_bytes;
    if (n_gqa > 0) d.attn = sp.attn;
    if (any_moe) {
        d.device_routing = host_routing.empty();
        // The float steps of the CPU kernel the CPU backend runs on this host, so that the
        // experts' rows match the CPU forward pass bit for bit (moe.cuh).
        if (d.device_routing) d.moe_order = quant::resolve_iq1s_kernel(quant::Iq1sKernel::best);
    }
    exec::PlanInputs in = sp.inputs;
    in.budget_bytes = params.memory_budget > 0 ? params.memory_budget : free_device_memory();
    plan_ = exec::make_plan(in);
    plan_.on_device = true;
    if (!plan_.fits())
        fail(Status::out_of_memory,
             std::string("the context does not fit in the device memory budget with a ") +
                 exec::kv_type_name(params.kv_type) + " KV cache: " + plan_.describe() +
                 (plan_.max_ctx_that_fits > 0 ? "; configure a context of at most " + std::to_string(plan_.max_ctx_that_fits)
                                              : "; the weights alone do not fit"));

    check(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "creating a CUDA stream");
    d.w = std::make_unique<GpuWeights>(w, options.progress);
    d.mm = std::make_unique<DeviceMatmul>(sp.limits, d.stream);

    // Caches, each poisoned (all-ones bytes: NaN floats, NaN f16 and q8_0 scales) so that a kernel
    // reading what nothing wrote shows up as NaN in the outputs instead of plausible numbers.
    if (n_gqa > 0) {
        d.kv_layer_bytes = uint64_t(n_ctx_) * d.attn.row_bytes;
        d.kv_mem = device_alloc(2 * uint64_t(n_gqa) * d.kv_layer_bytes, "the KV cache");
        d.kv = static_cast<uint8_t*>(d.kv_mem.get());
        check(cudaMemset(d.kv, 0xFF, 2 * uint64_t(n_gqa) * d.kv_layer_bytes), "poisoning the KV cache");
    }
    if (n_mla > 0) {
        d.latent_layer_halves = uint64_t(n_ctx_) * uint64_t(hp_.mla.kv_lora_rank + hp_.rope.n_rot);
        const uint64_t bytes = uint64_t(n_mla) * d.latent_layer_halves * sizeof(__half);
        d.latent_mem = device_alloc(bytes, "the latent (MLA) cache");
        d.latent = static_cast<__half*>(d.latent_mem.get());
        check(cudaMemset(d.latent, 0xFF, bytes), "poisoning the latent cache");
    }
    if (n_kda > 0) {
        const uint64_t D = uint64_t(hp_.kda_width()), dk = uint64_t(hp_.kda.head_dim);
        d.kda_conv_floats = 3 * D * uint64_t(hp_.kda.conv_kernel - 1);
        d.kda_layer_floats = d.kda_conv_floats + uint64_t(hp_.n_head) * dk * dk;
        d.kda_bytes = uint64_t(n_kda) * d.kda_layer_floats * sizeof(float);
        d.kda_mem = device_alloc(d.kda_bytes, "the recurrent (KDA) state");
        d.kda = static_cast<float*>(d.kda_mem.get());
        check(cudaMemset(d.kda, 0, d.kda_bytes), "clearing the recurrent state");
    }

    d.widths = exec::device_activation_widths(hp_, first_layer_, last_layer_);
    Carver measure(nullptr);
    carve_activations(d, measure, hp_, n_batch_, last_stage_);
    d.act_mem = device_alloc(measure.bytes(), "the activations");
    Carver place(static_cast<uint8_t*>(d.act_mem.get()));
    carve_activations(d, place, hp_, n_batch_, last_stage_);
    check(cudaMemset(d.act_mem.get(), 0xFF, measure.bytes()), "poisoning the activations");

    if (ws_bytes > 0) {
        d.ws_mem = device_alloc(ws_bytes, "the attention workspace");
        d.ws = d.ws_mem.get();
    }
    if (route_ws_bytes > 0) {
        d.route_ws_mem = device_alloc(route_ws_bytes, "the MoE routing workspace and expert activations");
        Carver moe_place(static_cast<uint8_t*>(d.route_ws_mem.get()));
        carve_moe_workspace(moe_place, hp_, d.route_ws, d.moe_act_in, d.moe_act_h);
    }
    if (any_moe) {
        d.router = std::make_unique<exec::MoeRouter>(hp_.moe);
        for (const model::LayerWeights& L : w.layers) d.host_bias.push_back(L.exp_probs_b);
        const uint64_t K = uint64_t(hp_.moe.n_expert_used), nb = uint64_t(n_batch_);
        d.h_router_mem = pinned_alloc(nb * uint64_t(hp_.moe.n_expert) * sizeof(float), "router logits");
        d.h_ints_mem = pinned_alloc(nb * 3 * K * sizeof(int32_t), "expert rows");
        d.h_w_mem = pinned_alloc(nb * K * sizeof(float), "expert weights");
        d.h_router = static_cast<float*>(d.h_router_mem.get());
        d.h_ints = static_cast<int32_t*>(d.h_ints_mem.get());
        d.h_w = static_cast<float*>(d.h_w_mem.get());
        if (!d.device_routing && graphs_) {
            graphs_ = false;
            graph_disabled_ = host_routing;
        }
    }

    // RoPE tables: the CPU's angles (exec::Rope, mscale included) for every position, when a
    // layer of the stage rotates.
    if (exec::device_rope_tables(hp_, first_layer_, last_layer_)) {
        const exec::Rope rope(hp_);
        d.n_pairs = int(rope.n_pairs());
        const size_t table = size_t(n_ctx_) * size_t(d.n_pairs);
        std::vector<float> host(2 * table);
        for (int64_t p = 0; p < n_ctx_; ++p)
            rope.angles(p, host.data() + size_t(p) * size_t(d.n_pairs), host.data() + table + size_t(p) * size_t(d.n_pairs));
        d.rope_mem = device_alloc(host.size() * sizeof(float), "the RoPE tables");
        check(cudaMemcpy(d.rope_mem.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
              "uploading the RoPE tables");
        d.cos = static_cast<const float*>(d.rope_mem.get());
        d.sin = d.cos + table;
    }

    const uint64_t out_floats = std::max(last_stage_ ? uint64_t(exec::device_logit_rows(n_batch_)) * uint64_t(hp_.n_vocab) : 0,
                                         uint64_t(n_batch_) * uint64_t(hidden_out_width()));
    d.h_ids_mem = pinned_alloc(uint64_t(n_batch_) * sizeof(int32_t), "token ids");
    d.h_n_past_mem = pinned_alloc(sizeof(int32_t), "n_past");
    d.h_in_mem = pinned_alloc(uint64_t(n_batch_) * uint64_t(hidden_in_width()) * sizeof(float), "hidden states in");
    d.h_out_mem = pinned_alloc(out_floats * sizeof(float), "outputs");
    d.h_ids = static_cast<int32_t*>(d.h_ids_mem.get());
    d.h_n_past = static_cast<int32_t*>(d.h_n_past_mem.get());
    d.h_in = static_cast<float*>(d.h_in_mem.get());
    d.h_out = static_cast<float*>(d.h_out_mem.get());
    check(cudaDeviceSynchronize(), "setting up the GPU context");
}

GpuContext::~GpuContext() = default;

int64_t GpuContext::output_floats(int64_t n_tokens, bool all_logits) const {
    if (!last_stage_) return n_tokens * hidden_out_width();
    return (all_logits ? n_tokens : 1) * hp_.n_vocab;
}

bool GpuContext::can_truncate(int64_t n_past) const { return exec::can_truncate(n_past, n_past_, recurrent_); }

void GpuContext::truncate(int64_t n_past) {
    exec::check_truncate(n_past, n_past_, recurrent_);
    n_past_ = n_past;
    if (n_past == 0) lost_.clear();
}

void GpuContext::check_room(int64_t n_tokens) const {
    if (!lost_.empty()) fail(Status::invalid_argument, lost_ + "; reset the sequence (or truncate it to 0) first");
    exec::check_context_room(n_tokens, n_past_, n_ctx_);
}

void GpuContext::decode(std::span<const int32_t> tokens, float* out, bool all_logits) {
    if (first_layer_ != 0)
        fail(Status::invalid_argument, "decode: this stage starts at layer " + std::to_string(first_layer_) +
                                           ", so it takes hidden states (forward_hidden), not token ids");
    const int64_t n = int64_t(tokens.size());
    check_room(n);
    if (!out) fail(Status::invalid_argument, "decode: null output buffer");
    exec::check_token_ids(tokens, hp_.n_vocab);
    run(tokens.data(), nullptr, n, out, all_logits);
}

void GpuContext::forward_hidden(const float* hidden_in, int64_t n, float* out, bool all_logits) {
    check_room(n);
    if (!hidden_in || !out) fail(Status::invalid_argument, "forward_hidden: null buffer");
    run(nullptr, hidden_in, n, out, all_logits);
}

void GpuContext::run(const int32_t* tokens, const float* hidden, int64_t n, float* out, bool all_logits) {
    try {
        run_batches(tokens, hidden, n, out, all_logits);
    } catch (...) {
        // Let whatever was queued finish before the pinned buffers are written again.
        cudaStreamSynchronize(d_->stream);
        (void)cudaGetLastError();
        // The recurrent state may already hold some of these tokens: it cannot be rolled back.
        if (recurrent_) mark_lost("a call failed after the recurrent (KDA) state took some of its tokens");
        throw;
    }
}

void GpuContext::run_batches(const int32_t* tokens, const float* hidden, int64_t n, float* out, bool all_logits) {
    Device& d = *d_;
    const int64_t E = hp_.n_embd, V = hp_.n_vocab;
    const int64_t W_in = hidden_in_width(), W_out = hidden_out_width(), M = hp_.max_banks();
    const int64_t banks_in = hp_.banks_before(first_layer_), banks_out = hp_.banks_before(last_layer_);
    const Input in = tokens ? Input::tokens : Input::hidden;
    for (int64_t c0 = 0; c0 < n; c0 += n_batch_) {
        const int64_t m = std::min(n_batch_, n - c0);
        Output o = !last_stage_ ? Output::hidden
                   : all_logits ? Output::all_logits
                                : (c0 + m == n ? Output::last_logits : Output::none);
        if (o == Output::all_logits && m == 1) o = Output::last_logits;  // the same single row
        // A new sequence starts from a zero recurrent state (exec::Context does the same).
        if (n_past_ == 0 && recurrent_)
            check(cudaMemsetAsync(d.kda, 0, d.kda_bytes, d.stream), "clearing the recurrent state");
        // Inputs through pinned memory (the captured graph reads them from fixed device buffers).
        *d.h_n_past = int32_t(n_past_);
        if (tokens) {
            std::memcpy(d.h_ids, tokens + c0, size_t(m) * sizeof(int32_t));
            check(cudaMemcpyAsync(d.ids, d.h_ids, size_t(m) * sizeof(int32_t), cudaMemcpyHostToDevice, d.stream),
                  "copying token ids to the device");
        } else {
            // Each row: the stream, then (attention residuals) the checkpoints banked so far.
            std::memcpy(d.h_in, hidden + c0 * W_in, size_t(m * W_in) * sizeof(float));
            check(cudaMemcpy2DAsync(d.a.x, size_t(E) * sizeof(float), d.h_in, size_t(W_in) * sizeof(float),
                                    size_t(E) * sizeof(float), size_t(m), cudaMemcpyHostToDevice, d.stream),
                  "copying hidden states to the device");
            if (banks_in > 0)
                check(cudaMemcpy2DAsync(d.a.bank, size_t(M * E) * sizeof(float), d.h_in + E, size_t(W_in) * sizeof(float),
                                        size_t(banks_in * E) * sizeof(float), size_t(m), cudaMemcpyHostToDevice, d.stream),
                      "copying banked checkpoints to the device");
        }
        check(cudaMemcpyAsync(d.n_past, d.h_n_past, sizeof(int32_t), cudaMemcpyHostToDevice, d.stream),
              "copying n_past to the device");

        // One token: the captured graph, after one direct run (lazy setup inside the kernels'
        // wrappers, if any, happens outside the capture).
        if (m == 1 && graphs_ && o != Output::none && d.one_token_runs[int(in)]++ > 0) replay(in, o);
        else enqueue(int(m), in, o == Output::all_logits ? Output::none : o);

        if (o == Output::all_logits) {
            // Every row's logits, a few rows at a time (device_logit_rows).
            const int64_t rows_max = exec::device_logit_rows(n_batch_);
            for (int64_t r0 = 0; r0 < m; r0 += rows_max) {
                const int64_t rows = std::min(rows_max, m - r0);
                check(rms_norm(d.a.x + r0 * E, d.w->output_norm, E, int(rows), float(hp_.rms_eps), d.a.xn, d.stream),
                      "rms_norm (output)");
                d.mm->run(d.w->output, d.a.xn, rows, d.logits);
                fetch(d.logits, rows * V, out + (c0 + r0) * V);
            }
        } else if (o == Output::last_logits) {
            // With all_logits this is a one-token micro-batch's row, which goes at its own place.
            fetch(d.logits, V, all_logits ? out + c0 * V : out);
        } else if (o == Output::hidden) {
            check(cudaMemcpy2DAsync(d.h_out, size_t(W_out) * sizeof(float), d.a.x, size_t(E) * sizeof(float),
                                    size_t(E) * sizeof(float), size_t(m), cudaMemcpyDeviceToHost, d.stream),
                  "copying hidden states from the device");
            if (banks_out > 0)
                check(cudaMemcpy2DAsync(d.h_out + E, size_t(W_out) * sizeof(float), d.a.bank, size_t(M * E) * sizeof(float),
                                        size_t(banks_out * E) * sizeof(float), size_t(m), cudaMemcpyDeviceToHost, d.stream),
                      "copying banked checkpoints from the device");
            check(cudaStreamSynchronize(d.stream), "running the forward pass on the GPU");
            std::memcpy(out + c0 * W_out, d.h_out, size_t(m * W_out) * sizeof(float));
        } else {
            check(cudaStreamSynchronize(d.stream), "running the forward pass on the GPU");
        }
        n_past_ += m;
    }
}

// Copies count floats from the device through pinned memory to dst once the stream gets there.
void GpuContext::fetch(const float* src, int64_t count, float* dst) {
    Device& d = *d_;
    check(cudaMemcpyAsync(d.h_out, src, size_t(count) * sizeof(float), cudaMemcpyDeviceToHost, d.stream),
          "copying outputs from the device");
    check(cudaStreamSynchronize(d.stream), "running the forward pass on the GPU");
    std::memcpy(dst, d.h_out, size_t(count) * sizeof(float));
}

void GpuContext::replay(Input in, Output o) {
    Device& d = *d_;
    cudaGraphExec_t& exec = d.graph[int(in)];
    if (!exec) {
        // A capture that fails (a kernel wrapper doing something a capture forbids) turns graphs
        // off for this context, saying why, and the step runs directly: slower, same numbers.
        check(cudaStreamBeginCapture(d.stream, cudaStreamCaptureModeThreadLocal), "beginning the decode graph capture");
        cudaGraph_t graph = nullptr;
        try {
            enqueue(1, in, o);
        } catch (const Error& e) {
            graph_disabled_ = std::string("capturing the decode step failed: ") + e.what();
        }
        const cudaError_t end = cudaStreamEndCapture(d.stream, &graph);
        if (graph_disabled_.empty() && end != cudaSuccess)
            graph_disabled_ = std::string("capturing the decode step failed: ") + cudaGetErrorString(end);
        if (graph_disabled_.empty()) {
            const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
            if (e != cudaSuccess) {
                exec = nullptr;
                graph_disabled_ = std::string("instantiating the decode graph failed: ") + cudaGetErrorString(e);
            }
        }
        if (graph) cudaGraphDestroy(graph);
        if (!graph_disabled_.empty()) {
            (void)cudaGetLastError();  // capture errors are not sticky; clear the record
            graphs_ = false;
            enqueue(1, in, o);
            return;
        }
    }
    check(cudaGraphLaunch(exec, d.stream), "replaying the decode graph");
    ++graph_replays_;
}

void GpuContext::enqueue(int m, Input in, Output o) {
    Device& d = *d_;
    const int64_t E = hp_.n_embd;
    const float eps = float(hp_.rms_eps);
    if (in == Input::tokens) check(get_rows(d.w->token_embd, d.ids, m, d.a.x, d.stream), "get_rows (token embeddings)");
    n_bank_ = hp_.banks_before(first_layer_);  // the same at every call: a captured graph stays valid
    for (size_t li = 0; li < d.w->layers.size(); ++li) enqueue_layer(li, m);
    if (last_stage_ && hp_.attn_res_block > 0) {  // the output norm reads a mix too
        residual_mix(d.w->output_res_score, m);
        check(cudaMemcpyAsync(d.a.x, d.a.mixed, size_t(m) * size_t(E) * sizeof(float), cudaMemcpyDeviceToDevice, d.stream),
              "copying the output mix");
    }
    if (o == Output::last_logits) {  // (all_logits: run() computes them in chunks of rows)
        check(rms_norm(d.a.x + int64_t(m - 1) * E, d.w->output_norm, E, 1, eps, d.a.xn, d.stream), "rms_norm (output)");
        d.mm->run(d.w->output, d.a.xn, 1, d.logits);
    }
}

void GpuContext::residual_mix(const float* w, int m) {
    Device& d = *d_;
    const int64_t E = hp_.n_embd;
    check(attn_res_mix(d.a.x, d.a.bank, int(n_bank_), hp_.max_banks() * E, w, m, E, float(hp_.rms_eps), d.a.mixed, d.stream),
          "attn_res_mix");
}

// One layer on m tokens of d.a.x, in exec::Context::run_layers' order: (attention residuals: the
// mix of the banked checkpoints, banking x every attn_res_block layers) norm, attention block,
// residual; (mix) norm, FFN block, residual.
void GpuContext::enqueue_layer(size_t li, int m) {
    Device& d = *d_;
    const GpuLayerWeights& L = d.w->layers[li];
    const int64_t E = hp_.n_embd, B = hp_.attn_res_block, il = first_layer_ + int64_t(li);
    const float eps = float(hp_.rms_eps);
    const size_t bytes = size_t(m) * size_t(E) * sizeof(float);
    cudaStream_t s = d.stream;

    const float* in = d.a.x;
    bool banked = false;
    if (B > 0) {
        residual_mix(L.attn_res_score, m);
        in = d.a.mixed;
        if (il % B == 0) {  // bank x itself; the stream restarts from this block's output
            check(cudaMemcpy2DAsync(d.a.bank + n_bank_ * E, size_t(hp_.max_banks() * E) * sizeof(float), d.a.x,
                                    size_t(E) * sizeof(float), size_t(E) * sizeof(float), size_t(m),
                                    cudaMemcpyDeviceToDevice, s),
                  "banking a checkpoint");
            ++n_bank_;
            banked = true;
        }
    }
    check(rms_norm(in, L.attn_norm, E, m, eps, d.a.xn, s), "rms_norm (attention)");
    if (L.recurrent) attention_kda(li, m);
    else if (hp_.is_mla()) attention_mla(li, m);
    else attention_gqa(li, m);
    if (banked) check(cudaMemcpyAsync(d.a.x, d.a.proj, bytes, cudaMemcpyDeviceToDevice, s), "restarting the stream");
    else check(add_inplace(d.a.x, d.a.proj, size_t(m) * size_t(E), s), "add_inplace (attention residual)");

    in = d.a.x;
    if (B > 0) {
        residual_mix(L.ffn_res_score, m);
        in = d.a.mixed;
    }
    check(rms_norm(in, L.ffn_norm, E, m, eps, d.a.xn, s), "rms_norm (ffn)");
    if (L.moe) ffn_moe(li, m);
    else ffn_dense(L.gate, L.up, L.down, m, d.a.proj);
    check(add_inplace(d.a.x, d.a.proj, size_t(m) * size_t(E), s), "add_inplace (ffn residual)");
}

// Grouped-query attention (exec::Context::attention_gqa): q/k/v (+ biases, per-head norms), RoPE,
// cache, attention, output projection.
void GpuContext::attention_gqa(size_t li, int m) {
    Device& d = *d_;
    const GpuLayerWeights& L = d.w->layers[li];
    const int64_t Q = hp_.n_q(), KV = hp_.n_kv();
    const int D = int(hp_.head_dim), H = int(hp_.n_head), HKV = int(hp_.n_head_kv);
    const float eps = float(hp_.rms_eps);
    const int neox = hp_.arch.rope_order == model::RopeOrder::neox ? 1 : 0;
    cudaStream_t s = d.stream;
    uint8_t* k_cache = d.kv + 2 * uint64_t(d.gqa_slot[li]) * d.kv_layer_bytes;
    uint8_t* v_cache = k_cache + d.kv_layer_bytes;

    d.mm->run(L.wq, d.a.xn, m, d.a.q);
    d.mm->run(L.wk, d.a.xn, m, d.a.k);
    d.mm->run(L.wv, d.a.xn, m, d.a.v);
    if (L.bq) {
        check(add_row_bias(d.a.q, L.bq, Q, m, s), "add_row_bias (q)");
        check(add_row_bias(d.a.k, L.bk, KV, m, s), "add_row_bias (k)");
        check(add_row_bias(d.a.v, L.bv, KV, m, s), "add_row_bias (v)");
    }
    if (L.q_norm) {
        check(head_rms_norm(d.a.q, L.q_norm, m, H, D, Q, eps, s), "head_rms_norm (q)");
        check(head_rms_norm(d.a.k, L.k_norm, m, HKV, D, KV, eps, s), "head_rms_norm (k)");
    }
    if (d.n_pairs > 0) {
        check(rope(d.a.q, m, H, D, Q, d.cos, d.sin, d.n_pairs, neox, d.n_past, s), "rope (q)");
        check(rope(d.a.k, m, HKV, D, KV, d.cos, d.sin, d.n_pairs, neox, d.n_past, s), "rope (k)");
    }
    check(kv_store(d.a.k, d.a.v, m, k_cache, v_cache, d.attn, d.n_past, s), "kv_store");
    check(attention(d.a.q, k_cache, v_cache, d.attn, m, d.n_past, d.ws, d.a.att, s), "attention");
    d.mm->run(L.wo, d.a.att, m, d.a.proj);
}

// SwiGLU (or SiTU where the model gives its betas): out = down(act(gate xn, up xn)).
void GpuContext::ffn_dense(const DeviceMatrix& gate, const DeviceMatrix& up, const DeviceMatrix& down, int m, float* out) {
    Device& d = *d_;
    d.mm->run(gate, d.a.xn, m, d.a.gate);
    d.mm->run(up, d.a.xn, m, d.a.up);
    check(ffn_activate(d.a.gate, d.a.up, size_t(m) * size_t(gate.rows), float(hp_.moe.situ_beta),
                       float(hp_.moe.situ_linear_beta), d.stream),
          "ffn_activate");
    d.mm->run(down, d.a.gate, m, out);
}

}  // namespace strata::cuda
